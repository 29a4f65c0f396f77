package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/edr-lite/edr-lite/step"
)

// One format, two harnesses (issue 34 point 2): a Go step recorded in
// process replays through "edr-lite replay --expect" against the process
// node it models (examples/brake-node), and what the CLI records of that
// node ("replay --record", "run") drives the in-process replay of the Go
// step.

type stepSpeed struct{ Speed float32 }

type stepBrake struct {
	Speed, Obstacle, Command float32
	Brake                    uint8
}

// stepBrakeNode is examples/brake-node's decision as a Go step (without
// an obstacle), every operation rounded to float32 as the node does.
func stepBrakeNode(threshold, gain float32) step.Func[stepSpeed, stepBrake] {
	return func(_ context.Context, in stepSpeed) (stepBrake, error) {
		v := in.Speed
		vv, tt := float32(v*v), float32(threshold*threshold)
		cmd := max(0, min(1, float32((vv-tt)*gain)))
		b := stepBrake{Speed: v, Obstacle: float32(math.NaN()), Command: cmd}
		if cmd > 0 {
			b.Brake = 1
		}
		return b, nil
	}
}

// stepBrakeLoop is the node's loop: its topics, and the types it declares
// (the output's layout is the node's own brake.layout).
func stepBrakeLoop(t *testing.T) step.Loop[stepSpeed, stepBrake] {
	t.Helper()
	layout, err := os.ReadFile(brakeLayout)
	if err != nil {
		t.Fatal(err)
	}
	in, err := step.Packed[stepSpeed]("edr.example.Speed", "f32le speed (m/s)\n")
	if err != nil {
		t.Fatal(err)
	}
	out, err := step.Packed[stepBrake]("edr.example.Brake", string(layout))
	if err != nil {
		t.Fatal(err)
	}
	return step.Loop[stepSpeed, stepBrake]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake", In: in, Out: out}
}

// recordStep records n ticks of the Go step, 10 ms apart, in process.
func recordStep(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inprocess.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := step.Record(rec, stepBrakeLoop(t), stepBrakeNode(18, 0.01))
	if err != nil {
		t.Fatal(err)
	}
	t0 := int64(1764670000e9)
	for i := range n {
		if _, err := f(step.WithTime(context.Background(), t0+int64(i)*10e6), stepSpeed{speedAt(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// replayStep replays the Go step from dump in process.
func replayStep(t *testing.T, dump string, gain float32) *step.Result {
	t.Helper()
	res, err := step.Replay(context.Background(), []string{dump}, step.Options{},
		step.Drive(stepBrakeLoop(t), stepBrakeNode(18, gain), step.DriveOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestStepRecordingThroughCLI: a recording made in process is a typed dump
// (info shows the types, cat --decode the fields) that replays through
// "replay --expect" against the process node: the same decisions pass, a
// changed threshold fails with the field named. What the CLI's closed loop
// records of the node then drives the in-process replay: the Go step
// matches it, a changed gain is caught.
func TestStepRecordingThroughCLI(t *testing.T) {
	rec := recordStep(t, 300)

	code, out, errs := runBin(t, "info", rec)
	if code != 0 || !regexp.MustCompile(`planner/brake +300 .* x-edr-packed +edr\.example\.Brake`).MatchString(out) ||
		!regexp.MustCompile(`vehicle/speed +300 .* x-edr-packed +edr\.example\.Speed`).MatchString(out) {
		t.Fatalf("info: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runBin(t, "cat", "--decode", "--topics", "planner/brake", rec)
	if code != 0 || !regexp.MustCompile(`"speed":20\.[0-9]+,"obstacle":"NaN","command":0\.[0-9]+,"brake":1`).MatchString(out) {
		t.Fatalf("cat --decode: exit %d\n%.2000s%s", code, out, errs)
	}

	// in process -> process node
	code, out, errs = replayNode(t, rec, nil, nil)
	if code != 0 || !strings.Contains(out, "closed loop (full): 300 inputs") || !strings.Contains(out, "ok: 300 outputs on 1 topic(s) match the recording") {
		t.Fatalf("the process node against the in-process recording: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = replayNode(t, rec, []string{"EDR_BRAKE_THRESHOLD=17"}, nil, "--schema", "planner/brake="+brakeLayout)
	if ms := mismatchLine.FindAllStringSubmatch(out, -1); code != 1 || len(ms) == 0 {
		t.Fatalf("threshold 17 against the in-process recording: exit %d\n%s%s", code, out, errs)
	}

	// process node, recorded by the CLI's closed loop -> in process
	session := filepath.Join(t.TempDir(), "session.pack")
	code, out, errs = replayNode(t, rec, nil, nil, "--record", session)
	if code != 0 {
		t.Fatalf("replay --record: exit %d\n%s%s", code, out, errs)
	}
	res := replayStep(t, session, 0.01)
	if !res.OK() || res.Loops[0].Matched != 300 || res.Ticks != 300 {
		t.Fatalf("the Go step against the node's closed-loop recording:\n%s", res)
	}
	for _, n := range res.Notes { // the node may declare planner/brake by name only
		if !strings.Contains(n, "without a schema") {
			t.Errorf("note: %s", n)
		}
	}
	res = replayStep(t, session, 0.012)
	if res.OK() || !strings.Contains(res.String(), ": value command: expected ") {
		t.Fatalf("a changed gain against the node's closed-loop recording:\n%s", res)
	}
	t.Logf("gain 0.012 against the closed loop's recording: %s", res.Mismatches[0].String())
}

// TestStepReplaysDaemonRecording: the node as "edr-lite run" recorded it
// in the field (speed published by a producer, decisions by the node)
// drives the Go step in process: it matches.
func TestStepReplaysDaemonRecording(t *testing.T) {
	dump := daemonRecording(t)
	res := replayStep(t, dump, 0.01)
	if !res.OK() || res.Ticks != 300 || res.Loops[0].Matched != 300 {
		t.Fatalf("the Go step against edr-lite run's recording of the node:\n%s", res)
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "vehicle/speed: recorded as x-edr-raw edr.example.Speed(f32le m/s), without a schema") {
		t.Fatalf("notes: %q", res.Notes)
	}
}

type stepReading struct {
	V float64 `json:"v"`
}

type stepCount struct {
	N  int     `json:"n"`
	In float64 `json:"in"`
}

// TestStepRecordingTypes: JSON and protobuf topics recorded in process are
// typed too (info shows them, cat --decode decodes them), and a recording
// exported to MCAP replays in process as the pack dump does.
func TestStepRecordingTypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "types.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counter := step.Loop[stepReading, stepCount]{Name: "counter", In: step.JSON[stepReading]("test.Reading"), Out: step.JSON[stepCount]("test.Count")}
	n := 0
	count := func(_ context.Context, in stepReading) (stepCount, error) { n++; return stepCount{N: n, In: in.V}, nil }
	pbIn, err := step.Protobuf(&durationpb.Duration{})
	if err != nil {
		t.Fatal(err)
	}
	pbOut, err := step.Protobuf(&wrapperspb.DoubleValue{})
	if err != nil {
		t.Fatal(err)
	}
	seconds := step.Loop[*durationpb.Duration, *wrapperspb.DoubleValue]{Name: "seconds", In: pbIn, Out: pbOut}
	secs := func(_ context.Context, d *durationpb.Duration) (*wrapperspb.DoubleValue, error) {
		return wrapperspb.Double(d.AsDuration().Seconds()), nil
	}
	f, _ := step.Record(rec, counter, count)
	g, _ := step.Record(rec, seconds, secs)
	brake, _ := step.Record(rec, stepBrakeLoop(t), stepBrakeNode(18, 0.01))
	for i := range 20 {
		f(context.Background(), stepReading{float64(i) / 2})
		g(context.Background(), durationpb.New(time.Duration(i)*250*time.Millisecond))
		brake(context.Background(), stepSpeed{speedAt(i * 5)})
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runBin(t, "info", path)
	for _, re := range []string{`counter/out +20 .* json +test\.Count`, `seconds/in +20 .* protobuf +google\.protobuf\.Duration`,
		`seconds/out +20 .* protobuf +google\.protobuf\.DoubleValue`} {
		if code != 0 || !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("info: exit %d, want %s\n%s%s", code, re, out, errs)
		}
	}
	code, out, errs = runBin(t, "cat", "--decode", "--topics", "counter/out,seconds/in", path)
	if code != 0 || !strings.Contains(out, `{"n":20,"in":9.5}`) || !strings.Contains(out, `"4.750s"`) {
		t.Fatalf("cat --decode: exit %d\n%.3000s%s", code, out, errs)
	}

	mc := filepath.Join(t.TempDir(), "types.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", path, "-o", mc); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errs)
	}
	for _, dump := range []string{path, mc} {
		n = 0
		res, err := step.Replay(context.Background(), []string{dump}, step.Options{},
			step.Drive(counter, count, step.DriveOptions{}), step.Drive(seconds, secs, step.DriveOptions{}),
			step.Drive(stepBrakeLoop(t), stepBrakeNode(18, 0.01), step.DriveOptions{}))
		if err != nil || !res.OK() || res.Ticks != 60 || len(res.Notes) != 0 {
			t.Fatalf("%s: %v\n%s", dump, err, res)
		}
	}
}
