package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/replay"
)

// The replay flags people know from rosbag2 ("ros2 bag play"): --exclude,
// --delay, --start-paused with a control socket, --playback-duration,
// --remap, --clock, and a loop with a count. They are declared and read
// here, apart from replay's own flags (replay.go), so the common reading
// filters of every verb can be merged beside them.

// rosbagFlags are the values of those flags.
type rosbagFlags struct {
	remap                        multiFlag
	delay, playbackDur, clockTop *string
	control                      *string
	startPaused                  *bool
	loopCount                    *int
	clockHz                      *float64
}

// declareRosbagFlags declares them on c.
func declareRosbagFlags(c *command) *rosbagFlags {
	f := &rosbagFlags{}
	c.fs.Var(&f.remap, "remap", "OLD=NEW (or OLD:=NEW) replays topic OLD as NEW (repeatable; rosbag2 --remap)")
	f.delay = c.fs.String("delay", "0", "wait this long before playing (each pass with --loop; rosbag2 -d)")
	f.playbackDur = c.fs.String("playback-duration", "", "rosbag2's name for --duration: this much message time from the start")
	f.startPaused = c.fs.Bool("start-paused", false, "start paused; step or resume with \"edr-lite replay-ctl\" on --control (rosbag2 -p)")
	f.control = c.fs.String("control", "", "serve pause, resume, step and status on this unix socket (see replay-ctl)")
	f.loopCount = c.fs.Int("loop-count", 0, "play N passes (implies --loop; 0 with --loop = until interrupted)")
	f.clockHz = c.fs.Float64("clock", 0, "publish a clock topic at this rate in Hz of message time (rosbag2 --clock; payload i64le ns)")
	f.clockTop = c.fs.String("clock-topic", replay.DefaultClockTopic, "the clock topic's name (with --clock)")
	return f
}

// apply checks the flags and sets them on opts (fs says which flags were
// given). An error is bad usage.
func (f *rosbagFlags) apply(fs *flag.FlagSet, opts *replay.Options) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if len(f.remap) > 0 {
		opts.Remap = map[string]string{}
		for _, r := range f.remap {
			old, nw, ok := strings.Cut(r, ":=")
			if !ok {
				old, nw, ok = strings.Cut(r, "=")
			}
			if !ok || old == "" || nw == "" {
				return fmt.Errorf("--remap %q: want OLD=NEW", r)
			}
			if prev, dup := opts.Remap[old]; dup && prev != nw {
				return fmt.Errorf("--remap %s is given twice (%s and %s)", old, prev, nw)
			}
			opts.Remap[old] = nw
		}
	}
	var err error
	if opts.Delay, err = units.ParseDuration(*f.delay); err != nil || opts.Delay < 0 {
		return fmt.Errorf("--delay %q: want a duration like 2s", *f.delay)
	}
	if given["playback-duration"] {
		if given["duration"] {
			return errors.New("--playback-duration is rosbag2's name for --duration: give one of them")
		}
		d, err := units.ParseDuration(*f.playbackDur)
		if err != nil || d <= 0 {
			return fmt.Errorf("--playback-duration %q: want a positive duration like 5s", *f.playbackDur)
		}
		opts.Duration = d
	}
	opts.StartPaused = *f.startPaused
	if *f.startPaused && *f.control == "" {
		return errors.New("--start-paused needs --control SOCKET (step and resume come from edr-lite replay-ctl)")
	}
	switch {
	case *f.loopCount < 0:
		return fmt.Errorf("--loop-count %d: want a positive count", *f.loopCount)
	case *f.loopCount > 0:
		opts.Loop, opts.Passes = true, *f.loopCount
	}
	if given["clock"] && !(*f.clockHz > 0 && *f.clockHz <= 1e6) {
		return fmt.Errorf("--clock %v: want a rate in Hz, above 0 and at most 1e6", *f.clockHz)
	}
	opts.ClockHz = *f.clockHz
	if given["clock-topic"] && opts.ClockHz == 0 {
		return errors.New("--clock-topic names the topic of --clock HZ")
	}
	opts.ClockTopic = *f.clockTop
	return nil
}

// serveControl serves the replay's control socket (--control) for p until
// the returned stop is called; nil stop when there is no socket.
func (f *rosbagFlags) serveControl(p *replay.Player) (stop func(), err error) {
	if *f.control == "" {
		return func() {}, nil
	}
	srv, err := control.Listen(*f.control, control.HandlerFunc(func(_ context.Context, req *control.Request) *control.Response {
		return replayControl(p, req)
	}))
	if err != nil {
		return nil, err
	}
	return func() { srv.Close() }, nil
}

// replayStatus is the status a replay reports on its control socket.
type replayStatus struct {
	Paused     bool   `json:"paused"`
	Messages   uint64 `json:"messages"`
	Bytes      uint64 `json:"bytes"`
	PositionNs int64  `json:"position_ns"`
	Position   string `json:"position,omitempty"` // position_ns in RFC 3339, UTC
}

// replayControl carries out one control request on p.
func replayControl(p *replay.Player, req *control.Request) *control.Response {
	switch req.Op {
	case "pause":
		p.Pause()
	case "resume":
		p.Resume()
	case "step":
		n := req.Steps
		if n == 0 {
			n = 1
		}
		if n < 0 || n > 1<<20 {
			return &control.Response{Error: fmt.Sprintf("step %d: want 1 to %d messages", n, 1<<20)}
		}
		for range n {
			p.Step()
		}
	case "status":
	default:
		return &control.Response{Error: fmt.Sprintf("unknown operation %q for a replay (want pause, resume, step or status)", req.Op)}
	}
	msgs, bytes, pos := p.Progress()
	st := replayStatus{Paused: p.Paused(), Messages: msgs, Bytes: bytes, PositionNs: pos}
	if pos != 0 {
		st.Position = time.Unix(0, pos).UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(st)
	return &control.Response{OK: true, Status: b}
}

func init() {
	register(&verb{name: "replay-ctl", summary: "pause, resume, step or query a replay started with --control", run: runReplayCtl})
}

// runReplayCtl is the replay-ctl verb: one request to a replay's control
// socket, its status printed.
func runReplayCtl(e *env) int {
	c := newCommand(e, "replay-ctl", "edr-lite replay-ctl pause|resume|step|status --socket PATH [--steps N] [--json]",
		`Control a replay started with "edr-lite replay ... --control PATH" (for
instance with --start-paused): the rosbag2 "pause", "resume" and "play_next"
services, over the replay's unix socket.

  pause    stop before the next message (the time paused is not made up)
  resume   continue at the recorded pace from where it stopped
  step     let the next message through (--steps N: the next N) and stay
           paused; a paused replay's clock topic ticks with the messages
  status   print whether it is paused, what it has written, and the message
           time it has reached

Each prints the replay's status after the request; --json prints it as one
JSON object. Exit 1 when no replay listens on the socket.`,
		"edr-lite replay dump.pack -o shm:/dev/shm/edr --start-paused --control /tmp/replay.sock &\nedr-lite replay-ctl step --socket /tmp/replay.sock --steps 10\nedr-lite replay-ctl resume --socket /tmp/replay.sock", 1, 1)
	sock := c.fs.String("socket", "", "the replay's control socket (its --control; required)")
	steps := c.fs.Int("steps", 1, "step: how many messages to let through")
	asJSON := c.fs.Bool("json", false, "print the status as JSON")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	op := args[0]
	switch op {
	case "pause", "resume", "step", "status":
	default:
		return c.usageErr("unknown action %q (want pause, resume, step or status)", op)
	}
	if *sock == "" {
		return c.usageErr("--socket is required (the replay's --control path)")
	}
	if *steps < 1 {
		return c.usageErr("--steps %d: want at least 1", *steps)
	}
	req := &control.Request{Op: op}
	if op == "step" {
		req.Steps = *steps
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := control.Do(ctx, *sock, req)
	if err != nil {
		if errors.Is(err, control.ErrNoRecorder) {
			return c.fail(fmt.Errorf("no replay is listening on %s (start one with --control %s)", *sock, *sock))
		}
		return c.fail(err)
	}
	if *asJSON {
		fmt.Fprintf(e.stdout, "%s\n", resp.Status)
		return exitOK
	}
	var st replayStatus
	if err := json.Unmarshal(resp.Status, &st); err != nil {
		return c.fail(fmt.Errorf("bad status from the replay: %v", err))
	}
	state := "playing"
	if st.Paused {
		state = "paused"
	}
	pos := st.Position
	if pos == "" {
		pos = "not started"
	}
	fmt.Fprintf(e.stdout, "%s: %d messages, %s written; at %s\n", state, st.Messages, units.FormatSize(int64(st.Bytes)), pos)
	return exitOK
}
