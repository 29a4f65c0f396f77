// Package step records a Go node's step function in process and replays
// it from the recording inside "go test": the reference replay's
// RecordingRhythm, ReplayRhythm, FeedCheck and turn tokens, over edr-lite's
// own dump format, so that one recording serves two harnesses — this
// package in process, and "edr-lite replay --expect" against a process
// node (docs/replay.md, "In process").
//
// In one paragraph: a node's step is a Func, func(ctx, In) (Out, error).
// A Loop names its input and output topics and gives a Codec for each type
// (JSON, Protobuf, Packed — a Go struct bound by field name to a layout of
// the schema room's layout language — or Bytes); the codec also gives the
// topic's type, so the recording is typed like any dump ("edr-lite info"
// shows it, "cat --decode" decodes it). Create starts a Recorder (a pack
// dump, written as NAME.tmp, made durable and renamed by Close); Record
// wraps a step once, with no change to the node: each call writes its
// input (with the tick's time, WithTime or the clock) and its output. The
// capture times the recorder gives are strictly increasing over every
// loop, so the order of the inputs in time is their global sequence, the
// order every tool (merge, replay --expect) reads them in. Replay drives
// the same steps from a recording (ours, or one "edr-lite replay --record"
// or "edr-lite run" wrote): each loop a Driver (Drive) with a Mode (Full,
// InputOnly, OutputOnly) and, for Full, a feedcheck.Check (Exact,
// Tolerance with bounds per field, None); Timing AsFast, Realtime or
// Scaled; the loops interleaved one tick at a time in their global
// sequence by turn tokens. A Result lists every mismatch as the closed
// loop does (topic, step, field, expected, got), through the same code
// (package feedcheck).
//
// It is not for: recording or replaying processes (packages engine and
// replay, "edr-lite run", "edr-lite replay"), or a node with several input
// topics per step (one Loop per input topic, or one topic carrying a
// struct).
//
// # Caveats
//
//   - Cost: a recorded tick takes a lock, a clock read, and encodes its
//     input and output into an in-memory batch; a goroutine of the
//     Recorder's writes the batches. A tick waits only when every batch is
//     waiting for the disk (RecorderStats.Stalls). The figures are in
//     docs/performance.md (BenchmarkRecord).
//   - Until Close, what was recorded lives in memory (up to
//     RecorderOptions.Batches batches) and in the file's pending frame: a
//     process that dies leaves NAME.tmp ("edr-lite recover" salvages its
//     whole frames).
//   - A recording problem (a value its codec cannot encode, a step called
//     after Close) never fails the node: the call runs unrecorded, counted
//     in the dump's labels (LabelLoops) and in Close's error; Replay notes
//     it, since a stateful step may then diverge.
//   - Replay holds the inputs and outputs of the loops' topics in memory.
//     Each loop runs on its own goroutine but never two ticks at once:
//     a step needs no lock for state it shares with another replayed loop.
//   - A step that reads the wall clock or random numbers does not replay:
//     read the tick's time with Time(ctx).
//   - Concurrency: a Recorder and the functions Record returns are safe
//     for concurrent use; a Driver is used by one Replay at a time.
package step
