//go:build !race

package step_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/step"
)

// TestRecordAllocs: a recorded tick of a step with packed codecs
// allocates nothing when its ctx carries the tick's time (WithTime); the
// batch is large enough that no handoff to the writer falls in the
// measure. Without the time, the recorder adds it to ctx: a
// context.WithValue, two allocations.
func TestRecordAllocs(t *testing.T) {
	rec, err := step.Create(filepath.Join(t.TempDir(), "a.pack"), step.RecorderOptions{BatchSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	node := &brakeNode{threshold: 18, gain: 0.01}
	f, err := step.Record(rec, brakeLoop(t), node.Step)
	if err != nil {
		t.Fatal(err)
	}
	ctx := step.WithTime(context.Background(), t0)
	in := Speed{19}
	testutil.AssertNoAllocs(t, func() { f(ctx, in) })
	if n := testutil.MinAllocs(100, func() { f(context.Background(), in) }); n > 2 {
		t.Errorf("without WithTime: %v allocations per tick, want at most 2", n)
	}
	// the packed codec alone, both ways
	loop := brakeLoop(t)
	buf := make([]byte, 0, 64)
	var out Brake
	b, _ := node.Step(ctx, in)
	testutil.AssertNoAllocs(t, func() {
		msg, _ := loop.Out.Append(buf[:0], b)
		loop.Out.Decode(msg, &out)
	})
}
