package step_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edr-lite/edr-lite/feedcheck"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/step"
)

// Sensor and Throttle are a node's input and output.
type Sensor struct {
	Speed  float64 `json:"speed"`
	Target float64 `json:"target"`
}

type Throttle struct {
	Throttle float64 `json:"throttle"`
}

// controller is the node's step: a proportional controller.
func controller(gain float64) step.Func[Sensor, Throttle] {
	return func(_ context.Context, in Sensor) (Throttle, error) {
		return Throttle{Throttle: gain * (in.Target - in.Speed)}, nil
	}
}

// controlLoop names the loop's topics (those a process node would read and
// publish) and the codecs of its types.
var controlLoop = step.Loop[Sensor, Throttle]{
	Name:   "cruise",
	Input:  "vehicle/speed",
	Output: "planner/throttle",
	In:     step.JSON[Sensor]("demo.Sensor"),
	Out:    step.JSON[Throttle]("demo.Throttle"),
}

// record records 50 ticks of the controller with gain 0.5 to path.
func record(path string) error {
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		return err
	}
	control, err := step.Record(rec, controlLoop, controller(0.5))
	if err != nil {
		rec.Abort()
		return err
	}
	ctx := context.Background()
	for i := range 50 {
		t := int64(1764670000e9) + int64(i)*10e6 // the sensor's time
		if _, err := control(step.WithTime(ctx, t), Sensor{Speed: float64(i) / 5, Target: 8}); err != nil {
			return err
		}
	}
	return rec.Close()
}

// Record a node's step in process: wrap it once, call the wrapped step
// where the node called its own, close the recorder.
func ExampleRecord() {
	dir, err := os.MkdirTemp("", "step-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.pack")

	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	control, err := step.Record(rec, controlLoop, controller(0.5)) // the node is unchanged
	if err != nil {
		log.Fatal(err)
	}
	for i := range 50 {
		out, err := control(context.Background(), Sensor{Speed: float64(i) / 5, Target: 8})
		if err != nil {
			log.Fatal(err)
		}
		_ = out // the node goes on with its output
	}
	if err := rec.Close(); err != nil { // NAME.tmp, fsync, rename
		log.Fatal(err)
	}
	for _, l := range rec.Stats().Loops {
		fmt.Printf("%s: %d ticks, %s -> %s\n", l.Name, l.Ticks, l.Input, l.Output)
	}
	// Output:
	// cruise: 50 ticks, vehicle/speed -> planner/throttle
}

// Replay a recorded step inside a test: the same step matches, a changed
// gain is caught with the field named, a change within the field's
// tolerance passes.
func ExampleReplay() {
	dir, err := os.MkdirTemp("", "step-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.pack")
	if err := record(path); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	recording := []string{path}

	// Full mode, exact check (the defaults), as fast as possible
	res, err := step.Replay(ctx, recording, step.Options{Timing: step.AsFast},
		step.Drive(controlLoop, controller(0.5), step.DriveOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same gain:", res.OK())

	// a changed gain: every difference with its step and field
	res, err = step.Replay(ctx, recording, step.Options{},
		step.Drive(controlLoop, controller(0.6), step.DriveOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	m := res.Mismatches[0]
	fmt.Printf("gain 0.6: %v, %d mismatches; step %d %s: expected %s, got %s\n", res.OK(), len(res.Mismatches), m.Step, m.Field, m.Expected, m.Got)

	// within a tolerance on that field
	tolerant := feedcheck.Check{Mode: feedcheck.Tolerance,
		Tolerances: []feedcheck.FieldTolerance{{Field: "throttle", Rel: 1e-3}}}
	res, err = step.Replay(ctx, recording, step.Options{},
		step.Drive(controlLoop, controller(0.5001), step.DriveOptions{Check: tolerant}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("gain 0.5001 within 0.1%:", res.OK())
	// Output:
	// same gain: true
	// gain 0.6: false, 49 mismatches; step 1 throttle: expected 4, got 4.8
	// gain 0.5001 within 0.1%: true
}

// Bind a Go struct to a packed layout by field name: the recording's
// topic is typed with the layout, so "edr-lite cat --decode" decodes it.
func ExamplePacked() {
	type Brake struct {
		Speed    float32
		Obstacle float32
		Command  float32
		Braking  uint8  `edr:"brake"` // a field named otherwise
		Note     string `edr:"-"`     // not in the layout
	}
	codec, err := step.Packed[Brake]("edr.example.Brake", `
f32le speed (m/s)
f32le obstacle (m)
f32le command
u8 brake
`)
	if err != nil {
		log.Fatal(err)
	}
	msg, err := codec.Append(nil, Brake{Speed: 20, Obstacle: 50, Command: 0.25, Braking: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(codec.Type(), len(msg), "bytes")
	d, _ := schema.NewDecoder(codec.Type())
	js, _ := d.AppendJSON(nil, msg)
	fmt.Println(string(js))
	// Output:
	// x-edr-packed edr.example.Brake 13 bytes
	// {"speed":20,"obstacle":50,"command":0.25,"brake":1}
}

// Several loops recorded together replay one tick at a time in the order
// they were recorded, each on its own goroutine.
func ExampleReplay_severalLoops() {
	dir, err := os.MkdirTemp("", "step-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "two.pack")
	rec, err := step.Create(path, step.RecorderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	doubler := step.Loop[float64, float64]{Name: "double", In: step.JSON[float64]("x"), Out: step.JSON[float64]("y")}
	double := func(_ context.Context, x float64) (float64, error) { return 2 * x, nil }
	cruise, _ := step.Record(rec, controlLoop, controller(0.5))
	twice, _ := step.Record(rec, doubler, double)
	ctx := context.Background()
	cruise(ctx, Sensor{Speed: 7, Target: 8})
	twice(ctx, 21)
	cruise(ctx, Sensor{Speed: 7.5, Target: 8})
	if err := rec.Close(); err != nil {
		log.Fatal(err)
	}

	show := func(name string) func(step.Tick[float64, float64]) {
		return func(t step.Tick[float64, float64]) { fmt.Println(t.Seq, name, t.In, "->", t.Out) }
	}
	res, err := step.Replay(ctx, []string{path}, step.Options{},
		step.Drive(controlLoop, controller(0.5), step.DriveOptions{}).OnTick(func(t step.Tick[Sensor, Throttle]) {
			fmt.Println(t.Seq, "cruise", t.In.Speed, "->", t.Out.Throttle)
		}),
		step.Drive(doubler, double, step.DriveOptions{}).OnTick(show("double")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.OK(), res.Ticks, "ticks")
	// Output:
	// 0 cruise 7 -> 0.5
	// 1 double 21 -> 42
	// 2 cruise 7.5 -> 0.25
	// true 3 ticks
}
