package step_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/feedcheck"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/step"
)

func replayBrake(t *testing.T, path string, node *brakeNode, opts step.DriveOptions) *step.Result {
	t.Helper()
	res, err := step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(brakeLoop(t), node.Step, opts))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReplaySameStepMatches: the node replayed against its own recording
// matches output for output, byte for byte.
func TestReplaySameStepMatches(t *testing.T) {
	path := recordBrake(t, 300)
	res := replayBrake(t, path, &brakeNode{threshold: 18, gain: 0.01}, step.DriveOptions{})
	if !res.OK() || res.Err() != nil {
		t.Fatalf("not OK:\n%s", res)
	}
	l := res.Loops[0]
	if res.Ticks != 300 || l.Ticks != 300 || l.Recorded != 300 || l.Got != 300 || l.Matched != 300 || len(res.Notes) != 0 {
		t.Fatalf("counts:\n%s", res)
	}
	if !strings.Contains(res.String(), "OK: 300 ticks") {
		t.Fatalf("report:\n%s", res)
	}
}

var commandLine = regexp.MustCompile(`^planner/brake step (\d+) \(planner/brake seq (\d+) at \+[0-9.]+m?s\): value command: expected ([0-9.e-]+), got ([0-9.e-]+)$`)

// TestReplayCatchesChangedGain is the acceptance test: a changed gain is
// caught with the field named (step, field, expected, got, as the closed
// loop reports it), and a change within the tolerance of that field
// passes.
func TestReplayCatchesChangedGain(t *testing.T) {
	path := recordBrake(t, 300)

	res := replayBrake(t, path, &brakeNode{threshold: 18, gain: 0.012}, step.DriveOptions{})
	if res.OK() || len(res.Mismatches) == 0 {
		t.Fatalf("a gain of 0.012 passed:\n%s", res)
	}
	braking := 0
	for i := range 300 {
		if s := speedAt(i); s > 18 && s*s-18*18 < 100 { // below saturation at 0.01 and 0.012
			braking++
		}
	}
	var commands int
	for _, m := range res.Mismatches {
		line := m.String()
		if sm := commandLine.FindStringSubmatch(line); sm != nil {
			commands++
			if sm[3] == sm[4] {
				t.Errorf("equal values reported: %s", line)
			}
			continue
		}
		if !strings.Contains(line, ": value brake:") {
			t.Errorf("unexpected mismatch: %s", line)
		}
	}
	if commands < braking/2 || res.Loops[0].Differing != commands {
		t.Fatalf("%d command mismatches, %d differing outputs, %d steps braking below saturation:\n%s", commands, res.Loops[0].Differing, braking, res)
	}
	if err := res.Err(); !errors.Is(err, step.ErrMismatch) || !strings.Contains(err.Error(), "value command") {
		t.Fatalf("Err: %v", err)
	}
	t.Logf("gain 0.012: %d mismatches, first %s", len(res.Mismatches), res.Mismatches[0].String())

	// a gain 1e-5 larger: a command differs by at most 1e-3 (100 (m/s)²
	// above the threshold at most before saturating)
	near := &brakeNode{threshold: 18, gain: 0.01001}
	if res := replayBrake(t, path, near, step.DriveOptions{}); res.OK() {
		t.Fatalf("exact check passed a changed gain:\n%s", res)
	}
	tol := feedcheck.Check{Mode: feedcheck.Tolerance, Tolerances: []feedcheck.FieldTolerance{{Field: "command", Abs: 2e-3}}}
	if res := replayBrake(t, path, near, step.DriveOptions{Check: tol}); !res.OK() {
		t.Fatalf("within the tolerance of command:\n%s", res)
	}
	// the same tolerance does not cover the gain of 0.012
	if res := replayBrake(t, path, &brakeNode{threshold: 18, gain: 0.012}, step.DriveOptions{Check: tol}); res.OK() {
		t.Fatalf("a gain of 0.012 within tolerance 2e-3:\n%s", res)
	}
	// none: only the count
	if res := replayBrake(t, path, &brakeNode{threshold: 18, gain: 0.012}, step.DriveOptions{Check: feedcheck.Check{Mode: feedcheck.None}}); !res.OK() || res.Loops[0].Check != "none" {
		t.Fatalf("check none:\n%s", res)
	}
}

// TestReplayModes: InputOnly runs the step and compares nothing;
// OutputOnly hands the recorded outputs to OnTick without running a step.
func TestReplayModes(t *testing.T) {
	path := recordBrake(t, 50)
	ctx := context.Background()
	changed := &brakeNode{threshold: 17, gain: 0.01}

	var got []step.Tick[Speed, Brake]
	d := step.Drive(brakeLoop(t), changed.Step, step.DriveOptions{Mode: step.InputOnly}).OnTick(func(tk step.Tick[Speed, Brake]) { got = append(got, tk) })
	res, err := step.Replay(ctx, []string{path}, step.Options{}, d)
	if err != nil || !res.OK() || len(res.Mismatches) != 0 || len(got) != 50 || res.Loops[0].Got != 50 || res.Loops[0].Check != "-" {
		t.Fatalf("input-only: %v\n%s", err, res)
	}
	for i, tk := range got {
		want, _ := changed.Step(ctx, Speed{speedAt(i)})
		if tk.Seq != i || tk.Step != i+1 || tk.TimeNs != t0+int64(i)*10e6 || tk.In.Speed != speedAt(i) || !tk.HasOut || tk.Out.Command != want.Command {
			t.Fatalf("tick %d: %+v", i, tk)
		}
	}

	got = got[:0]
	d = step.Drive[Speed, Brake](brakeLoop(t), nil, step.DriveOptions{Mode: step.OutputOnly}).OnTick(func(tk step.Tick[Speed, Brake]) { got = append(got, tk) })
	if res, err = step.Replay(ctx, []string{path}, step.Options{}, d); err != nil || !res.OK() || len(got) != 50 || res.Loops[0].Got != 0 {
		t.Fatalf("output-only: %v\n%s", err, res)
	}
	orig := &brakeNode{threshold: 18, gain: 0.01}
	for i, tk := range got {
		want, _ := orig.Step(ctx, Speed{speedAt(i)})
		if !tk.HasOut || tk.Out.Command != want.Command || tk.Out.Speed != want.Speed {
			t.Fatalf("tick %d: %+v, want the recorded %+v", i, tk.Out, want)
		}
	}

	// a step is needed unless output-only
	if _, err := step.Replay(ctx, []string{path}, step.Options{}, step.Drive[Speed, Brake](brakeLoop(t), nil, step.DriveOptions{})); !errors.Is(err, step.ErrOptions) {
		t.Fatalf("no step: %v", err)
	}
	if m, err := step.ParseMode("input-only"); err != nil || m != step.InputOnly {
		t.Fatal(m, err)
	}
	if _, err := step.ParseMode("inputonly"); !errors.Is(err, step.ErrOptions) || !strings.Contains(err.Error(), "want full, input-only or output-only") {
		t.Fatalf("typo: %v", err)
	}
}

// fakeClock is a virtual clock whose Sleep advances it and records the
// sleeps.
type fakeClock struct {
	mu     sync.Mutex
	now    int64
	sleeps []time.Duration
}

func (c *fakeClock) Now() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now += int64(d)
	return nil
}

// TestReplayTiming: as fast as possible never sleeps; real time waits the
// recorded gaps; scaled waits them divided by the factor (on a virtual
// clock: the test does not depend on the machine's speed).
func TestReplayTiming(t *testing.T) {
	path := recordBrake(t, 20) // 10 ms apart
	node := &brakeNode{threshold: 18, gain: 0.01}
	for _, tc := range []struct {
		timing step.Timing
		gap    time.Duration
		name   string
	}{{step.AsFast, 0, "as fast as possible"}, {step.Realtime, 10 * time.Millisecond, "real time"},
		{step.Scaled(2), 5 * time.Millisecond, "at 2x"}, {step.Scaled(0.5), 20 * time.Millisecond, "at 0.5x"}} {
		c := &fakeClock{now: 5e9}
		res, err := step.Replay(context.Background(), []string{path}, step.Options{Timing: tc.timing, Now: c.Now, Sleep: c.Sleep},
			step.Drive(brakeLoop(t), node.Step, step.DriveOptions{}))
		if err != nil || !res.OK() {
			t.Fatalf("%v: %v\n%s", tc.timing, err, res)
		}
		if res.Timing != tc.name {
			t.Errorf("timing %q, want %q", res.Timing, tc.name)
		}
		if tc.gap == 0 {
			if len(c.sleeps) != 0 || res.Late.Samples != 0 {
				t.Errorf("as fast: slept %v", c.sleeps)
			}
			continue
		}
		if len(c.sleeps) != 19 || res.Late.Samples != 20 || res.Late.Max != 0 || res.Elapsed != 19*tc.gap {
			t.Fatalf("%v: %d sleeps, late %+v, elapsed %v", tc.timing, len(c.sleeps), res.Late, res.Elapsed)
		}
		for _, d := range c.sleeps {
			if d != tc.gap {
				t.Fatalf("%v: slept %v, want %v", tc.timing, d, tc.gap)
			}
		}
	}
	if _, err := step.Replay(context.Background(), []string{path}, step.Options{Timing: step.Scaled(-1)},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{})); !errors.Is(err, step.ErrOptions) {
		t.Fatalf("negative rate: %v", err)
	}
}

// counter is a second loop: it counts its ticks and answers with the
// count and the input, as JSON.
type Count struct {
	N  int     `json:"n"`
	In float64 `json:"in"`
}

type Reading struct {
	V float64 `json:"v"`
}

func counterLoop() step.Loop[Reading, Count] {
	return step.Loop[Reading, Count]{Name: "counter", In: step.JSON[Reading]("test.Reading"), Out: step.JSON[Count]("test.Count")}
}

// TestSeveralLoopsInterleaved: two loops recorded from two goroutines at
// once are replayed one tick at a time in the order they were recorded
// (their global sequence), run after run, whatever the goroutines'
// scheduling; each loop's state evolves as it did.
func TestSeveralLoopsInterleaved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string // the recorded order of the inputs
	node := &brakeNode{threshold: 18, gain: 0.01}
	brake, err := step.Record(rec, brakeLoop(t), func(ctx context.Context, in Speed) (Brake, error) {
		return node.Step(ctx, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	counter, err := step.Record(rec, counterLoop(), func(_ context.Context, in Reading) (Count, error) {
		n++
		return Count{N: n, In: in.V}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			mu.Lock() // the order of the calls is the order recorded
			order = append(order, "brake")
			brake(context.Background(), Speed{speedAt(i)})
			mu.Unlock()
			if i%7 == 0 {
				time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 200 {
			mu.Lock()
			order = append(order, "counter")
			counter(context.Background(), Reading{float64(i) / 4})
			mu.Unlock()
			if i%5 == 0 {
				time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			}
		}
	}()
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	for run := range 10 {
		var got []string
		m := 0
		jitter := func() { // the goroutines' scheduling changes run to run
			if rand.IntN(4) == 0 {
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
			}
		}
		b := step.Drive(brakeLoop(t), func(ctx context.Context, in Speed) (Brake, error) {
			jitter()
			got = append(got, "brake") // no lock: ticks never run at once
			return node.Step(ctx, in)
		}, step.DriveOptions{})
		c := step.Drive(counterLoop(), func(_ context.Context, in Reading) (Count, error) {
			jitter()
			got = append(got, "counter")
			m++
			return Count{N: m, In: in.V}, nil
		}, step.DriveOptions{})
		loops := []step.Replayer{b, c}
		if run%2 == 1 {
			loops = []step.Replayer{c, b} // the order given does not matter either
		}
		res, err := step.Replay(context.Background(), []string{path}, step.Options{}, loops...)
		if err != nil || !res.OK() || res.Ticks != 400 {
			t.Fatalf("run %d: %v\n%s", run, err, res)
		}
		if fmt.Sprint(got) != fmt.Sprint(order) {
			t.Fatalf("run %d: ticks ran in another order than recorded", run)
		}
	}
}

// TestReplayRefuses: what cannot be replayed is an error naming it.
func TestReplayRefuses(t *testing.T) {
	path := recordBrake(t, 10)
	ctx := context.Background()
	node := &brakeNode{threshold: 18, gain: 0.01}
	f := func(name string, want string, target error, opts step.Options, d ...step.Replayer) {
		t.Helper()
		_, err := step.Replay(ctx, []string{path}, opts, d...)
		if !errors.Is(err, target) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %v naming %q", name, err, target, want)
		}
	}
	typo := brakeLoop(t)
	typo.Input = "vehicle/sped"
	f("typo", "no topic vehicle/sped in "+path+" (it holds planner/brake, vehicle/speed)", step.ErrRecording, step.Options{},
		step.Drive(typo, node.Step, step.DriveOptions{}))
	json := step.Loop[Speed, Brake]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake",
		In: step.JSON[Speed]("edr.example.Speed"), Out: brakeLoop(t).Out}
	f("type", "vehicle/speed was recorded as x-edr-packed edr.example.Speed, the loop's codec is json edr.example.Speed", step.ErrRecording,
		step.Options{}, step.Drive(json, node.Step, step.DriveOptions{}))
	other, _ := step.Packed[Speed]("edr.example.Speed", "f32be speed\n")
	f("layout", "recorded as x-edr-packed edr.example.Speed (another schema)", step.ErrRecording, step.Options{},
		step.Drive(step.Loop[Speed, Brake]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake", In: other, Out: brakeLoop(t).Out}, node.Step, step.DriveOptions{}))
	f("twice", "topic vehicle/speed is used by loop brake and by loop brake", step.ErrOptions, step.Options{},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{}), step.Drive(brakeLoop(t), node.Step, step.DriveOptions{}))
	f("align", "paired by tick", step.ErrOptions, step.Options{},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{Check: feedcheck.Check{Align: feedcheck.AlignNearest, Window: time.Millisecond}}))
	f("check topic", `check topic "planner/x" does not match the output planner/brake`, step.ErrOptions, step.Options{},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{Check: feedcheck.Check{Topic: "planner/x"}}))
	f("tolerance", "tolerances must be 0 or more", step.ErrOptions, step.Options{},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{Check: feedcheck.Check{Mode: feedcheck.Tolerance, Abs: -1}}))
	raw := step.Loop[Speed, []byte]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake", In: brakeLoop(t).In, Out: step.Bytes("edr.example.Brake")}
	f("no decoder", "a tolerance check needs a decoder", step.ErrOptions, step.Options{},
		step.Drive(raw, func(context.Context, Speed) ([]byte, error) { return nil, nil }, step.DriveOptions{Check: feedcheck.Check{Mode: feedcheck.Tolerance}}))
	f("no loop", "no loop", step.ErrOptions, step.Options{})

	// not a dump: named
	bad := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(bad, []byte("hello, world\n"), 0o644)
	if _, err := step.Replay(ctx, []string{bad}, step.Options{}, step.Drive(brakeLoop(t), node.Step, step.DriveOptions{})); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("foreign file: %v", err)
	}
	// cut short: whatever it holds is replayed, the missing ticks noted
	cut := filepath.Join(t.TempDir(), "cut.pack")
	data, _ := os.ReadFile(path)
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	if _, err := step.Replay(ctx, []string{cut}, step.Options{}, step.Drive(brakeLoop(t), node.Step, step.DriveOptions{})); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("cut file: %v", err)
	}
}

// TestStepErrors: a step that fails where it failed when recorded
// matches (no output either side); one that fails where the recording has
// an output is a mismatch saying so.
func TestStepErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "err.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("speed out of range")
	node := &brakeNode{threshold: 18, gain: 0.01}
	picky := func(ctx context.Context, in Speed) (Brake, error) {
		if in.Speed > 20.5 {
			return Brake{}, boom
		}
		return node.Step(ctx, in)
	}
	recorded, _ := step.Record(rec, brakeLoop(t), picky)
	fails := 0
	for i := range 100 {
		if _, err := recorded(context.Background(), Speed{speedAt(i)}); errors.Is(err, boom) {
			fails++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil || fails == 0 {
		t.Fatal(err, fails)
	}
	if st := rec.Stats(); st.Loops[0].StepErrors != uint64(fails) || st.Loops[0].Ticks != 100 || st.Loops[0].Outputs != uint64(100-fails) {
		t.Fatalf("stats %+v", st)
	}
	res, err := step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(brakeLoop(t), picky, step.DriveOptions{}))
	if err != nil || !res.OK() || len(res.Errors) != fails || res.Errors[0].Recorded {
		t.Fatalf("the same failures: %v\n%s", err, res)
	}
	stricter := func(ctx context.Context, in Speed) (Brake, error) {
		if in.Speed > 20 {
			return Brake{}, boom
		}
		return node.Step(ctx, in)
	}
	res, err = step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(brakeLoop(t), stricter, step.DriveOptions{}))
	if err != nil || res.OK() || res.Loops[0].Missing == 0 {
		t.Fatalf("new failures: %v\n%s", err, res)
	}
	if s := res.Mismatches[0].String(); !strings.Contains(s, "missing: expected an output, got error: speed out of range") {
		t.Fatalf("mismatch %s", s)
	}
}

// TestRecordingIsTyped: the recording declares each topic's type (the
// codecs'), in time order, with its loops in the labels.
func TestRecordingIsTyped(t *testing.T) {
	path := recordBrake(t, 5)
	src, err := dumpfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	loop := brakeLoop(t)
	types := map[string]string{}
	for _, tp := range src.Topics() {
		types[tp.String()] = tp.Type.String()
		want := loop.In.Type()
		if tp.Name == "planner/brake" {
			want = loop.Out.Type()
		}
		if !tp.Type.Equal(want) {
			t.Errorf("%s: type %v, want %v", tp.String(), tp.Type, want)
		}
	}
	if len(types) != 2 {
		t.Fatalf("topics %v", types)
	}
	info, ok := src.DumpInfo()
	if !ok || info.Labels[step.LabelOutputs] != "planner/brake" || info.Labels[step.LabelInputs] != "vehicle/speed" ||
		!strings.Contains(info.Labels[step.LabelLoops], `"name":"brake","input":"vehicle/speed","output":"planner/brake","ticks":5,"outputs":5`) {
		t.Fatalf("info %+v", info)
	}
	var prev int64
	var topics []string
	err = src.InFileOrder(func(m *dumpfile.Message) error {
		if m.DoneNs <= prev {
			return fmt.Errorf("capture time %d after %d", m.DoneNs, prev)
		}
		prev = m.DoneNs
		topics = append(topics, m.Name)
		return nil
	})
	if err != nil || strings.Join(topics, " ") != strings.Repeat("vehicle/speed planner/brake ", 5)[:len(strings.Repeat("vehicle/speed planner/brake ", 5))-1] {
		t.Fatalf("order %v: %v", topics, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("a .tmp is left: %v", err)
	}
}

// TestOutputsCapturedBeforeTheirInput: a recorder that captured a node's
// answer before its input (two segments read in turn) still gets the
// answer attributed to its input by producer time, as the closed loop
// does; an answer without a producer time goes to the last input at or
// before it, and one before every input is counted, not compared.
func TestOutputsCapturedBeforeTheirInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "early.pack")
	w, err := pack.Create(path, pack.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loop := brakeLoop(t)
	w.SetTopicType("vehicle/speed", "", loop.In.Type(), 0)
	w.SetTopicType("planner/brake", "", loop.Out.Type(), 0)
	node := &brakeNode{threshold: 18, gain: 0.01}
	enc := func(c step.Codec[Brake], v Speed) []byte {
		b, _ := node.Step(context.Background(), v)
		m, _ := c.Append(nil, b)
		return m
	}
	speed := func(v float32) []byte { m, _ := loop.In.Append(nil, Speed{v}); return m }
	// an answer with no input before it
	w.Add("planner/brake", "", nil, 0, t0-5, enc(loop.Out, Speed{1}))
	for i := range 20 {
		gen, at := t0+int64(i)*10e6, t0+int64(i)*10e6+100
		v := speedAt(i)
		switch i % 3 {
		case 0: // the answer captured first
			w.Add("planner/brake", "", nil, gen, at-50, enc(loop.Out, Speed{v}))
			w.Add("vehicle/speed", "", nil, gen, at, speed(v))
		case 1: // after
			w.Add("vehicle/speed", "", nil, gen, at, speed(v))
			w.Add("planner/brake", "", nil, gen, at+50, enc(loop.Out, Speed{v}))
		default: // no producer time on the answer
			w.Add("vehicle/speed", "", nil, gen, at, speed(v))
			w.Add("planner/brake", "", nil, 0, at, enc(loop.Out, Speed{v}))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res := replayBrake(t, path, node, step.DriveOptions{})
	if !res.OK() || res.Loops[0].Matched != 20 || res.Loops[0].BeforeFirstInput != 1 ||
		len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "1 recorded outputs older than its first input") {
		t.Fatalf("%s", res)
	}
}
