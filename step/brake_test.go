package step_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/step"
)

// The node of these tests is examples/brake-node written as a step: the
// speed in, the braking decision out, every operation rounded to float32
// as the example nodes compute it, so the Go step and the process node
// give the same bytes.

// Speed is the input: vehicle/speed, one f32le.
type Speed struct {
	Speed float32
}

// Brake is the output: planner/brake, examples/brake-node/brake.layout.
type Brake struct {
	Speed    float32
	Obstacle float32
	Command  float32
	Brake    uint8
}

const speedLayout = "f32le speed (m/s)\n"

// brakeLayoutFile is the example node's layout, which it declares as
// planner/brake's type.
const brakeLayoutFile = "../examples/brake-node/brake.layout"

// brakeNode is the decision logic: threshold in m/s, gain per (m/s)².
type brakeNode struct {
	threshold, gain float32
}

func (n *brakeNode) Step(_ context.Context, in Speed) (Brake, error) {
	v := in.Speed
	vv, tt := float32(v*v), float32(n.threshold*n.threshold)
	cmd := float32((vv - tt) * n.gain)
	cmd = max(0, min(1, cmd))
	b := Brake{Speed: v, Obstacle: float32(math.NaN()), Command: cmd}
	if cmd > 0 {
		b.Brake = 1
	}
	return b, nil
}

// brakeLoop is the node's loop with packed codecs.
func brakeLoop(t testing.TB) step.Loop[Speed, Brake] {
	t.Helper()
	layout, err := os.ReadFile(brakeLayoutFile)
	if err != nil {
		t.Fatal(err)
	}
	in, err := step.Packed[Speed]("edr.example.Speed", speedLayout)
	if err != nil {
		t.Fatal(err)
	}
	out, err := step.Packed[Brake]("edr.example.Brake", string(layout))
	if err != nil {
		t.Fatal(err)
	}
	return step.Loop[Speed, Brake]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake", In: in, Out: out}
}

// speedAt is the speed profile: 15 m/s ± 6, crossing the 18 m/s
// threshold both ways.
func speedAt(i int) float32 { return 15 + 6*float32(math.Sin(2*math.Pi*float64(i)/150)) }

const t0 = int64(1764670000_000000000)

// recordBrake records n ticks of the node (threshold 18, gain 0.01) 10 ms
// apart and returns the recording's path.
func recordBrake(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "brake.pack")
	clock := t0
	rec, err := step.Create(path, step.RecorderOptions{Now: func() int64 { clock += 1000; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	node := &brakeNode{threshold: 18, gain: 0.01}
	recorded, err := step.Record(rec, brakeLoop(t), node.Step)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		clock = t0 + int64(i)*10e6
		if _, err := recorded(step.WithTime(ctx, clock), Speed{speedAt(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
