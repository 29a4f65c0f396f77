// Package replay feeds recorded dumps back: to shared memory or UDP with
// timing modes, and through Lua rules in message time so that triggers can be
// regression-tested.
//
// In one paragraph: Open (or New over pack readers) makes a Player over one
// or more dumps, pack or MCAP in any mix, merged message by message in
// message time (capture time: pack dumpfile.MessageTime, MCAP log_time;
// ties keep the order of the files, then each file's order), restricted by
// Options to topic globs, a start offset and a duration or end time. Run hands every message to an Output — NewShm (one shm
// segment per topic), NewUDP (one datagram per message), Discard or an
// OutputFunc — as fast as possible (Rate 0), in real time (Rate 1) or scaled
// (Rate 2, 0.5), once or in a Loop; Pause, Resume and Step control it from
// another goroutine, and Stats report throughput and, in timed modes, the
// player's own timing error (p50 / p99 / max); Options also carry the
// flags of "ros2 bag play" (Exclude, Remap, Delay, Passes, StartPaused,
// ClockHz). RunRules feeds dumps through a scripts.Host in message time
// and Compare checks the triggers it fired against the ones recorded in
// the dumps: time, tag, severity, windows and params.
//
// The closed loop: NewLoop over dumps with LoopOptions (Expect names the
// outputs of a system under test; every other topic is an input) and
// Loop.Run publish the inputs to an Output, collect what the system
// publishes on the expected topics with a private engine.Recorder fed by
// its own shm.Consumer and capture.UDPSource (Listen), and compare it with
// the recorded outputs by per-topic Checks (CheckExact, CheckTolerance on
// schema-decoded numeric fields, CheckNone; AlignSeq, AlignTime,
// AlignNearest) in ModeFull, or record it (ModeInputOnly, Record), or
// re-emit the recorded outputs (ModeOutputOnly); Lockstep paces the inputs
// by the system's answers; LoopOptions.Node starts the node under test,
// waits until it is ready (Ready: a segment, a bound UDP port, a line it
// prints), watches it (an exit during the replay fails the run with
// ErrNode) and stops it at the end (SIGTERM, SIGKILL after a grace). A
// LoopResult lists every Mismatch and the latency from input to output. An Orchestrator coordinates several
// players (Options.Turn, Loop.AddPlayer) and live UDP players (LiveUDP)
// on one timeline with TurnTokens.
//
// UDP addressing: with UDPOptions.Base "host:port", the i-th topic in sorted
// topic order (Player.Topics: by "name", or "name#channel" for a channel)
// goes to host:port+i; UDPOptions.Map names other addresses for some topics.
// Each datagram is the recorded payload, with no header.
//
// MCAP dumps are read through dumpfile (mcap.PackReader): each
// channel is a topic (edr-lite's name, channel and type, or for other
// writers the channel topic and its schema name or message encoding),
// log_time the capture time, publish_time the producer time, the payload
// as recorded and the meta channel's bytes as Message.Meta.
//
// It is not for: recording (package engine; the closed loop's private
// recorder is one), writing MCAP (mcap), or the JSON-lines export and
// import (jsonl).
//
// # Caveats
//
//   - Message.Meta and Message.Data alias the dump's read-only mapping and
//     are valid only until Output.Write returns.
//   - Timing: a message is due at start + (message time - first message
//     time) / Rate. The player sleeps until then (or until Options.Spin
//     before, then polls the clock); timing error is measured from the due
//     time to the moment the message is handed to the output (late only:
//     the player is never early). Time spent paused is not made up.
//   - Outputs never block: the shm producer overwrites the oldest records of
//     a full segment when its consumer lags (as fast as possible, size
//     ShmOptions.Capacity to the data or replay at a rate), and UDP receivers
//     drop datagrams their socket buffer cannot hold.
//   - Concurrency: a Player's Run is called once from one goroutine; Pause,
//     Resume, Step and Progress are safe from any goroutine. Outputs and the rule
//     helpers are not safe for concurrent use. Several players of one
//     Orchestrator run on their own goroutines; only the turn holder writes,
//     so players of one loop share its state without races. A Loop's Run
//     is called once.
//   - The closed loop allocates on the player's path (the recorded outputs
//     and the release times of the inputs are kept); the collector's ingest
//     path (the private recorder's sink) does not (alloc_test.go). Memory
//     follows the dumps: see docs/replay.md for the bounds.
//   - The node under test runs in a process group of its own (stopped as a
//     whole; on Linux killed if the replaying process dies: Pdeathsig,
//     which Linux ties to the thread that started it). Its output is read
//     line by line, each cut at 1 KiB; only the last 20 lines of its
//     stderr are kept. A node that leaves a child holding its pipes does
//     not hold the loop past one second after it exits.
//   - Outputs are attributed to inputs by producer time, else by time: a
//     node that neither stamps its answers with its input's time nor answers
//     before the next input can be paired with the wrong step; lockstep makes
//     the order deterministic.
package replay
