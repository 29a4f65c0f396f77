package step

import (
	"context"
	"fmt"
	"strings"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// Func is a node's step: one input in, one output out (the reference's
// Yield and Feed). Record wraps one without changing its signature; Replay
// calls the same function with the recorded inputs.
type Func[In, Out any] func(ctx context.Context, in In) (Out, error)

// Loop names a step loop (the reference's rhythm) and its two topics, and
// gives the codecs of its input and output.
//
// The topics are those a process node would read and publish, so one
// recording serves both harnesses: "edr-lite replay REC -o shm:DIR
// --expect OUTPUT" feeds Input to a process node and compares what it
// publishes on Output, and Replay feeds the same inputs to the Go step.
// "name#channel" names a channel.
type Loop[In, Out any] struct {
	// Name names the loop in reports; "" takes Input.
	Name string
	// Input is the input topic; "" is Name + "/in".
	Input string
	// Output is the output topic; "" is Name + "/out".
	Output string
	In     Codec[In]
	Out    Codec[Out]
}

// loopDef is a Loop without its types: what the recorder and the replay
// keep of it.
type loopDef struct {
	name, input, output string
	inType, outType     ingest.Type
}

func (l *Loop[In, Out]) def() (loopDef, error) {
	d := loopDef{name: l.Name, input: l.Input, output: l.Output}
	if d.name == "" {
		d.name = d.input
	}
	if d.name == "" {
		return d, fmt.Errorf("%w: a loop needs a name or an input topic", ErrOptions)
	}
	if d.input == "" {
		d.input = d.name + "/in"
	}
	if d.output == "" {
		d.output = d.name + "/out"
	}
	if l.In == nil || l.Out == nil {
		return d, fmt.Errorf("%w: loop %s: a codec for its input and its output", ErrOptions, d.name)
	}
	for _, t := range []string{d.input, d.output} {
		if name, _ := pack.SplitTopic(t); name == "" || strings.ContainsAny(t, "*?[") {
			return d, fmt.Errorf("%w: loop %s: topic %q: a name, not a glob", ErrOptions, d.name, t)
		}
	}
	if d.input == d.output {
		return d, fmt.Errorf("%w: loop %s: input and output are both %s", ErrOptions, d.name, d.input)
	}
	d.inType, d.outType = l.In.Type(), l.Out.Type()
	for _, t := range []ingest.Type{d.inType, d.outType} {
		if err := t.Validate(); err != nil {
			return d, fmt.Errorf("%w: loop %s: %v", ErrCodec, d.name, err)
		}
	}
	return d, nil
}

// checkTopics refuses loops that share a topic.
func checkTopics(defs []loopDef) error {
	seen := map[string]string{}
	for _, d := range defs {
		for _, t := range []string{d.input, d.output} {
			if other, dup := seen[t]; dup {
				return fmt.Errorf("%w: topic %s is used by loop %s and by loop %s", ErrOptions, t, other, d.name)
			}
			seen[t] = d.name
		}
	}
	return nil
}

type timeKey struct{}

// WithTime returns ctx carrying the time of the tick it is passed to (ns
// since the UNIX epoch; a sensor's timestamp, say): a recorded step
// records it as the tick's time, the producer time of its input and
// output messages. Without it the recorder reads its clock.
func WithTime(ctx context.Context, ns int64) context.Context {
	return context.WithValue(ctx, timeKey{}, ns)
}

// Time returns the time of the tick a step runs in: the one given with
// WithTime or read by the recorder, and during a replay the recorded one.
// A step that needs the time reads it here, not from the clock, so that
// its replay computes what it computed.
func Time(ctx context.Context) (int64, bool) {
	ns, ok := ctx.Value(timeKey{}).(int64)
	return ns, ok
}
