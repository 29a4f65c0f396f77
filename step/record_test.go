package step_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/step"
)

// TestRecordSmallBatches: with batches far smaller than the steps produce
// (every tick waits for the writer), a loop added while the others run is
// recorded whole and nothing deadlocks: the writer reads the topics of a
// new loop while a tick holds the recorder waiting for a free batch.
func TestRecordSmallBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.pack")
	rec, err := step.Create(path, step.RecorderOptions{BatchSize: 64, Batches: 2})
	if err != nil {
		t.Fatal(err)
	}
	node := &brakeNode{threshold: 18, gain: 0.01}
	brake, err := step.Record(rec, brakeLoop(t), node.Step)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			brake(context.Background(), Speed{speedAt(i)})
		}
	}()
	time.Sleep(time.Millisecond)
	n := 0
	counter, err := step.Record(rec, counterLoop(), func(_ context.Context, in Reading) (Count, error) {
		n++
		return Count{N: n, In: in.V}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		counter(context.Background(), Reading{float64(i)})
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the recorder is stuck")
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	st := rec.Stats()
	if st.Loops[0].Ticks != 3000 || st.Loops[1].Ticks != 3000 || st.Loops[1].Outputs != 3000 {
		t.Fatalf("stats %+v", st)
	}
	n = 0
	res, err := step.Replay(context.Background(), []string{path}, step.Options{},
		step.Drive(brakeLoop(t), node.Step, step.DriveOptions{}),
		step.Drive(counterLoop(), func(_ context.Context, in Reading) (Count, error) {
			n++
			return Count{N: n, In: in.V}, nil
		}, step.DriveOptions{}))
	if err != nil || !res.OK() || res.Ticks != 6000 {
		t.Fatalf("%v\n%s", err, res)
	}
}

// TestRecordProblems: a value the codec cannot encode is not recorded,
// the node runs all the same, and Close, the dump's labels and the replay
// say so; calls after Close run unrecorded; a loop reusing a topic is
// refused.
func TestRecordProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loop := step.Loop[Reading, Count]{Name: "c", In: step.JSON[Reading]("r"), Out: step.JSON[Count]("c")}
	calls := 0
	f, err := step.Record(rec, loop, func(_ context.Context, in Reading) (Count, error) {
		calls++
		return Count{N: calls, In: in.V}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.Record(rec, step.Loop[Reading, Count]{Name: "d", Input: "c/in", In: loop.In, Out: loop.Out}, nil); !errors.Is(err, step.ErrOptions) ||
		!strings.Contains(err.Error(), "topic c/in is used by loop d and by loop c") {
		t.Fatalf("topic reused: %v", err)
	}
	for _, v := range []float64{1, math.NaN(), 3} { // JSON has no NaN
		if out, err := f(context.Background(), Reading{v}); err != nil || out.N != calls {
			t.Fatal(out, err)
		}
	}
	err = rec.Close()
	if !errors.Is(err, step.ErrCodec) || !strings.Contains(err.Error(), "1 calls or outputs not recorded; the first: loop c: input: json: unsupported value: NaN") {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the recording is kept: %v", err)
	}
	if out, err := f(context.Background(), Reading{4}); err != nil || out.N != 4 || calls != 4 {
		t.Fatal("after Close the step does not run", out, err)
	}
	if st := rec.Stats(); st.Loops[0].Ticks != 2 || st.Loops[0].Unrecorded != 2 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := step.Record(rec, counterLoop(), nil); !errors.Is(err, step.ErrClosed) {
		t.Fatalf("Record after Close: %v", err)
	}
	if err2 := rec.Close(); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second Close: %v", err2)
	}
	calls = 0
	res, err := step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(loop, func(_ context.Context, in Reading) (Count, error) {
		calls++
		return Count{N: calls, In: in.V}, nil
	}, step.DriveOptions{}))
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "says 1 calls or outputs were not recorded: a stateful step may diverge") {
		t.Fatalf("%v\n%s", err, res)
	}
	// the counter diverged: the unrecorded call is missing from its state
	if res.OK() || !strings.Contains(res.String(), "c/out step 2 (c/out seq 1 at ") {
		t.Fatalf("%s", res)
	}

	// Abort leaves nothing
	apath := filepath.Join(t.TempDir(), "a.pack")
	a, _ := step.Create(apath, step.RecorderOptions{})
	g, _ := step.Record(a, loop, func(context.Context, Reading) (Count, error) { return Count{}, nil })
	g(context.Background(), Reading{1})
	a.Abort()
	if _, err := os.Stat(apath); !os.IsNotExist(err) {
		t.Fatal("Abort left the recording")
	}
	if _, err := os.Stat(apath + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("Abort left the .tmp")
	}
	// a directory that does not exist: named
	if _, err := step.Create(filepath.Join(t.TempDir(), "no", "such.pack"), step.RecorderOptions{}); err == nil || !strings.Contains(err.Error(), "no/such.pack") {
		t.Fatalf("Create: %v", err)
	}
}
