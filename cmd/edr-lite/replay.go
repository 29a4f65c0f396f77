package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/replay"
)

func init() {
	register(&verb{name: "replay", summary: "replay dumps into shared memory or UDP, as fast as possible or in (scaled) real time", run: runReplay})
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

var _ flag.Value = (*multiFlag)(nil)

// replayUsage, replayHelp and replayExample are the help of replay.
const (
	replayUsage = "edr-lite replay FILE... -o shm:DIR | udp:HOST:PORT | discard [--rate F | --asfast] [--loop | --loop-count N] [--topics G,...] [--exclude G,...] [--from T] [--to T] [--start D] [--duration D] [--delay D] [--remap OLD=NEW] [--clock HZ] [--start-paused] [--control SOCK]\nedr-lite replay DUMP... -o shm:DIR|udp:HOST:PORT --expect GLOB [--collect GLOB] [--mode full|input-only|output-only] [--listen shm:DIR|udp:HOST:PORT=TOPIC] [--check MODE|GLOB=MODE] [--schema TOPIC=FILE] [--checks FILE] [--align seq|time|nearest] [--lockstep ack:TOPIC|outputs] [--timeout D] [--record OUT] [--format text|json] [--node \"CMD ARGS\" [--node-ready segment:TOPIC|udp:PORT|line:REGEXP] [--node-timeout D] [--node-grace D]]"
	replayHelp  = `Replay dumps, pack or MCAP in any mix, merged message by message in
capture-time order, into a live system: the payload bytes exactly as
recorded. An MCAP file (a dump written with format = "mcap", an export, a
file of another tool) is read in log_time order: each channel is a topic
(edr-lite's name, channel and type, or the channel's topic and schema name),
log_time the capture time and publish_time the producer time.

  -o shm:DIR         one shared-memory segment per topic in DIR (an edr-lite
                     recorder or any shm consumer watching DIR picks them up);
                     the topic's name, channel, type and producer times are
                     carried over. When the replay ends the segments are
                     removed once a consumer drained them (--keep-segments
                     leaves them).
  -o udp:HOST:PORT   one datagram per message; the i-th topic in sorted topic
                     order goes to HOST:PORT+i (the mapping is printed), or
                     where --map TOPIC=HOST:PORT says.
  -o discard         drop everything (measures replay speed).
(Before the selection flags, --to named the output: --to shm:DIR, udp:… or
discard still does, with a note.)

Timing: --rate 1 (the default) keeps the recorded gaps between messages,
--rate 2 plays twice as fast, --rate 0.5 at half speed, --asfast does not wait.
The summary gives messages, bytes, msg/s and, in timed modes, how late
messages were handed over (timing error p50 / p99). Messages too large for
the output (a UDP datagram, half a segment) are dropped and counted. Ctrl-C
stops cleanly and prints the summary. --start and --duration count message
time from the first message.

rosbag2's "ros2 bag play" flags: --exclude (-x, below), --delay (-d, before each
pass), --start-paused (-p, with --control SOCK: step and resume with
"edr-lite replay-ctl"), --playback-duration (= --duration), --remap
OLD=NEW (OLD:=NEW also works), --clock HZ (a clock topic, payload the
message time as i64le ns, ticking every 1/HZ of message time), --loop (-l)
and --loop-count N.

Closed loop, to test a node against a recording: --expect GLOB names the
topics the system under test publishes (its outputs); every other topic is
an input. --mode full (the default) publishes the inputs, collects what the
node publishes on the expected topics (from the -o shm directory, or
--listen shm:DIR / udp:HOST:PORT=TOPIC) into a private recorder, and
compares it with the recorded outputs: --check exact (the bytes; field by
field with --schema), tolerance (numeric fields within --abs + --rel times
the recorded value; needs --schema TOPIC=FILE, a packed layout, or
FILE@pkg.Message, a protobuf descriptor set, or json) or none (the count;
the latency too with --window), pairing outputs by --align seq, time (equal
producer times) or nearest (in replay time, within --window); --checks FILE
sets all that per topic. Every mismatch is listed with its topic, input
step, sequence, time, field, expected and got values, and the exit status is
1; --format json prints the report for CI. Outputs recorded before the
first input are not compared. An --expect glob that matches no topic of the
dumps is refused in every mode. --mode input-only collects without comparing
(--record FILE writes inputs and outputs to a new dump; --collect GLOB names
outputs the recording does not hold, collected under their own names);
--format json carries the reason of a failure ("error"); --mode output-only
re-emits the recorded outputs with their timing. --lockstep ack:TOPIC (one
message per input on TOPIC, which may be the output itself) or outputs
(as many outputs as the recording holds) releases each input only once the
node answered the ones before: deterministic even when the node is slower
than real time. --timeout bounds every wait for the node. The report gives
the latency from input to output (p50, p99, max).

The node under test's life cycle (as ROS 2's launch_testing): --node "CMD
ARGS" starts it (words split as a shell does, leading NAME=VALUE set its
environment; its own process group), waits until it is ready (--node-ready
segment:TOPIC: a new segment of TOPIC in the listened shm directory, the
default for every expected topic; udp:PORT: a socket bound to PORT;
line:REGEXP: a line it prints; at most --node-timeout), shows its output
on stderr prefixed "node: ", watches it (a node that exits during the
replay fails the run with its exit status and the last lines of its
stderr, apart from a node that runs and stays silent) and stops it at the
end (SIGTERM, SIGKILL after --node-grace).

Several players on one timeline: --player TO=DUMP[,DUMP] replays more dumps
to another output, --live udp:HOST:PORT=TOPIC forwards datagrams received
while replaying to -o as TOPIC. One orchestrator gives them turns by
message time; equal times go to the player named first (the main dumps,
then each --player, then each --live). With --expect they are all inputs,
and lockstep waits for the answer to each before the next of any player.

` + selectHelp
	replayExample = "edr-lite replay dump.pack -o shm:/dev/shm/edr --rate 1\nedr-lite replay a.pack b.mcap -o udp:127.0.0.1:30000 --topics 'vehicle/*' --exclude vehicle/imu --from 10s --to 15s --loop\nedr-lite replay dump.pack -o shm:/dev/shm/edr --exclude 'camera/*' --remap vehicle/speed=sim/speed --clock 100 --loop-count 3\nedr-lite replay dump.pack -o shm:/dev/shm/edr --start-paused --control /tmp/replay.sock\nedr-lite replay drive.pack -o shm:/dev/shm/edr --expect 'planner/*' --asfast --lockstep ack:planner/brake\nedr-lite replay drive.pack -o shm:/dev/shm/edr --expect planner/brake --check tolerance --schema planner/brake=brake.layout --format json\nedr-lite replay drive.pack -o shm:/tmp/sut --expect planner/brake --asfast --node \"./brake-node -shm /tmp/sut\""
)

// runReplay is the replay verb: it reads the flags, opens the dumps and
// the output, and plays them.
func runReplay(e *env) int {
	c := newCommand(e, "replay", replayUsage, replayHelp, replayExample, 1, -1)
	f := declareReplayFlags(c)
	rf := declareRosbagFlags(c)
	lf := declareLoopFlags(c)
	pf := declarePlayerFlags(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	opts, err := f.options(c.fs)
	if err != nil {
		return c.usageErr("%v", err)
	}
	if f.legacyTo {
		fmt.Fprintf(e.stderr, "edr-lite replay: note: --to %s names the output; it is -o %s now (--to is the end of the selection)\n", *f.out, *f.out)
	}
	if err := rf.apply(c.fs, &opts); err != nil {
		return c.usageErr("%v", err)
	}
	out, udp, err := f.output()
	if err != nil {
		return c.usageErr("%v", err)
	}
	var empty error // what to say when the selection replays nothing
	if !f.sel.All() {
		infos, err := readInfos(args)
		if err != nil {
			return c.fail(err)
		}
		held, fromNs, toNs, usage, err := c.selectIn(f.sel, infos...)
		if usage != nil {
			return c.usageErr("%v", usage)
		}
		if err != nil {
			return c.fail(err)
		}
		if fromNs != filter.MinNs {
			opts.FromNs = fromNs
		}
		if toNs != filter.MaxNs {
			opts.UntilNs = toNs
		}
		empty = f.sel.Empty(held, fromNs, toNs)
	}
	given := map[string]bool{}
	c.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	// several players: one orchestrator paces the timeline at --rate
	var extra *extraPlayers
	rate := opts.Rate
	if pf.active() {
		ps, ls, err := pf.parse(given)
		if err != nil {
			return c.usageErr("%v", err)
		}
		o, err := replay.NewOrchestrator(rate)
		if err != nil {
			return c.usageErr("%v", err)
		}
		opts.Rate, opts.Turn = 0, o.Join("main")
		if extra, err = openExtra(o, ps, ls, *f.out, f.shmOptions("")); err != nil {
			if errors.Is(err, replay.ErrOptions) {
				return c.usageErr("%v", err)
			}
			return c.fail(err)
		}
		defer extra.close()
	}
	if lf.active() {
		lo, err := lf.options(given, *f.out)
		if err != nil {
			return c.usageErr("%v", err)
		}
		return runLoop(c, lf, rf, args, opts, lo, out, udp, extra, rate)
	}
	if n := lf.usedWithoutExpect(given); n != "" {
		return c.usageErr("--%s is for a closed loop: give --expect with the topics the system under test publishes", n)
	}
	c.warnSkippedIn(args)
	p, err := replay.Open(args, opts)
	if err != nil {
		if errors.Is(err, replay.ErrOptions) {
			return c.usageErr("%v", err)
		}
		return c.fail(err)
	}
	defer p.Close()
	if len(p.Topics()) == 0 || (opts.ClockHz > 0 && len(p.Topics()) == 1) {
		if f.sel.Topics.All() {
			return c.fail(fmt.Errorf("%s: no message to replay", strings.Join(args, ", ")))
		}
		return c.fail(fmt.Errorf("no topic of the dumps matches %s", f.sel.Topics))
	}
	if udp != nil {
		out = announce{udp, e}
	}
	if extra != nil {
		return playMany(c, p, out, extra, rate)
	}
	stopCtl, err := rf.serveControl(p)
	if err != nil {
		return c.fail(err)
	}
	defer stopCtl()
	whole := opts.Start == 0 && opts.Duration == 0 && opts.FromNs == 0 && opts.UntilNs == 0 && !opts.Loop
	return play(c, p, out, opts.Rate, whole, empty)
}

// replayFlags are the values of replay's flags.
type replayFlags struct {
	out, start, duration, capacity, spin *string
	rate                                 *float64
	asfast, loop, keep                   *bool
	maps                                 multiFlag
	selFlags                             *selectFlags
	sel                                  filter.Selection
	legacyTo                             bool // --to gave the output (before -o)
}

// declareReplayFlags declares replay's flags on c.
func declareReplayFlags(c *command) *replayFlags {
	f := &replayFlags{}
	f.out = c.fs.String("o", "", "`OUTPUT`: shm:DIR, udp:HOST:PORT or discard (required)")
	f.rate = c.fs.Float64("rate", 1, "timing: 1 = real time, 2 = twice as fast, 0.5 = half speed")
	f.asfast = c.fs.Bool("asfast", false, "replay as fast as possible (no waiting)")
	f.loop = c.fs.Bool("loop", false, "start over at the end, until interrupted")
	f.selFlags = declareSelectFlags(c)
	f.start = c.fs.String("start", "0", "skip this much message time from the first message (e.g. 10s)")
	f.duration = c.fs.String("duration", "0", "replay this much message time (0 = to the end)")
	f.capacity = c.fs.String("capacity", "", "shm: ring size of each segment (default 1MiB)")
	f.keep = c.fs.Bool("keep-segments", false, "shm: leave the segments in DIR when the replay ends (by default they are removed once a consumer drained them, or after 500ms)")
	f.spin = c.fs.String("spin", "0", "timed modes: poll the clock for this long before each due time instead of sleeping (e.g. 200us; costs a core)")
	c.fs.Var(&f.maps, "map", "udp: TOPIC=HOST:PORT sends TOPIC there instead (repeatable)")
	return f
}

// shmOptions returns the options of a shm output to dir as --capacity
// (checked by output) and --keep-segments say.
func (f *replayFlags) shmOptions(dir string) replay.ShmOptions {
	so := replay.ShmOptions{Dir: dir, Keep: *f.keep}
	if n, err := units.ParseSize(*f.capacity); *f.capacity != "" && err == nil {
		so.Capacity = int(n)
	}
	return so
}

// options checks the selection and timing flags (fs says whether --rate
// was given) and returns them as replay.Options. An error is bad usage.
func (f *replayFlags) options(fs *flag.FlagSet) (replay.Options, error) {
	if isOutputSpec(*f.selFlags.to) && *f.out == "" {
		*f.out, *f.selFlags.to, f.legacyTo = *f.selFlags.to, "", true
	}
	var err error
	if f.sel, err = f.selFlags.parse(); err != nil {
		return replay.Options{}, err
	}
	opts := replay.Options{Topics: f.sel.Include, Exclude: f.sel.Exclude, Rate: *f.rate, Loop: *f.loop}
	rateSet := false
	fs.Visit(func(fl *flag.Flag) { rateSet = rateSet || fl.Name == "rate" })
	switch {
	case *f.asfast && rateSet:
		return opts, errors.New("--rate and --asfast exclude each other")
	case *f.asfast:
		opts.Rate = 0
	case *f.rate <= 0:
		return opts, fmt.Errorf("--rate %v: must be positive (use --asfast for no waiting)", *f.rate)
	}
	if opts.Start, err = units.ParseDuration(*f.start); err != nil || opts.Start < 0 {
		return opts, fmt.Errorf("--start %q: want a duration like 10s", *f.start)
	}
	if opts.Duration, err = units.ParseDuration(*f.duration); err != nil || opts.Duration < 0 {
		return opts, fmt.Errorf("--duration %q: want a duration like 5s", *f.duration)
	}
	if opts.Spin, err = units.ParseDuration(*f.spin); err != nil || opts.Spin < 0 {
		return opts, fmt.Errorf("--spin %q: want a duration like 200us", *f.spin)
	}
	return opts, nil
}

// output returns the output --to names, configured by --capacity (shm) or
// --map (udp); udp is that output when it is a UDP one. An error is bad
// usage.
func (f *replayFlags) output() (out replay.Output, udp *replay.UDPOutput, err error) {
	scheme, rest, _ := strings.Cut(*f.out, ":")
	switch {
	case *f.out == "":
		return nil, nil, errors.New("-o OUTPUT is required (shm:DIR, udp:HOST:PORT or discard)")
	case scheme == "shm" && rest != "":
		if *f.capacity != "" {
			if _, err := units.ParseSize(*f.capacity); err != nil {
				return nil, nil, fmt.Errorf("--capacity: %v", err)
			}
		}
		out = replay.NewShm(f.shmOptions(rest))
	case scheme == "udp" && rest != "":
		uo := replay.UDPOptions{Base: rest, Map: map[string]string{}}
		for _, m := range f.maps {
			k, v, ok := strings.Cut(m, "=")
			if !ok || k == "" || v == "" {
				return nil, nil, fmt.Errorf("--map %q: want TOPIC=HOST:PORT", m)
			}
			uo.Map[k] = v
		}
		udp = replay.NewUDP(uo)
		out = udp
	case *f.out == "discard":
		out = replay.Discard{}
	default:
		return nil, nil, fmt.Errorf("-o %q: want shm:DIR, udp:HOST:PORT or discard", *f.out)
	}
	if len(f.maps) > 0 && udp == nil {
		return nil, nil, errors.New("--map is for -o udp:HOST:PORT")
	}
	return out, udp, nil
}

// play runs p into out until it ends, fails or is interrupted (Ctrl-C,
// SIGTERM: not a failure), with a progress bar on a terminal, prints the
// summary and returns the exit code; a replay of nothing fails with empty
// when that is not nil (a selection that matched no message).
func play(c *command, p *replay.Player, out replay.Output, rate float64, whole bool, empty error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	finished := make(chan struct{})
	if isTerminal(c.e.stderr) {
		showProgress(c.e, p, whole, done, finished)
	} else {
		close(finished)
	}
	st, err := p.Run(ctx, out)
	close(done)
	<-finished // the bar's last line before the summary
	interrupted := ctx.Err() != nil && errors.Is(err, ctx.Err())
	if interrupted {
		err = nil
	}
	printReplaySummary(c.e, &st, rate, interrupted)
	if err != nil {
		return c.fail(err)
	}
	if empty != nil && !interrupted && st.Messages+st.Dropped == 0 {
		return c.fail(empty)
	}
	return exitOK
}

// showProgress starts a goroutine drawing a progress bar of the messages
// replayed on e.stderr, updated every 100 ms, until done is closed: out
// of the messages of the topics replayed when the whole dumps are played
// once, else a count.
func showProgress(e *env, p *replay.Player, whole bool, done <-chan struct{}, finished chan<- struct{}) {
	total := int64(-1)
	if whole {
		total = 0
		for _, t := range p.Topics() {
			total += int64(t.Messages)
		}
	}
	bar := newProgress(e, total, "replaying", "messages")
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				n, _, _ := p.Progress()
				bar.set(int64(n))
				bar.finish()
				close(finished)
				return
			case <-t.C:
				n, _, _ := p.Progress()
				bar.set(int64(n))
			}
		}
	}()
}

// isOutputSpec reports whether s names a replay output (what --to meant
// before it was the selection's end): no time is spelled this way.
func isOutputSpec(s string) bool {
	return s == "discard" || strings.HasPrefix(s, "shm:") || strings.HasPrefix(s, "udp:")
}

// announce prints the UDP mapping once the output has resolved it.
type announce struct {
	*replay.UDPOutput
	e *env
}

func (a announce) Open(topics []replay.Topic) error {
	if err := a.UDPOutput.Open(topics); err != nil {
		return err
	}
	d := a.Destinations()
	for i := range topics {
		fmt.Fprintf(a.e.stderr, "  %-32s -> udp %s\n", topics[i].String(), d[i])
	}
	return nil
}

// passes is "1 pass" or "N passes".
func passes(n int) string {
	if n == 1 {
		return "1 pass"
	}
	return fmt.Sprintf("%d passes", n)
}

func printReplaySummary(e *env, st *replay.Stats, rate float64, interrupted bool) {
	mode := "as fast as possible"
	if rate > 0 {
		mode = fmt.Sprintf("rate %g", rate)
	}
	fmt.Fprintf(e.stdout, "replayed %s, %s in %s (%s, %s): %.0f msg/s, %s/s\n",
		count(int(st.Messages), "message"), units.FormatSize(int64(st.Bytes)), st.Elapsed.Round(time.Millisecond), mode, passes(int(st.Passes)),
		st.MsgsPerSec(), units.FormatSize(int64(st.BytesPerSec())))
	if st.Samples > 0 {
		fmt.Fprintf(e.stdout, "timing error: p50 %s, p99 %s, max %s over %d messages\n",
			st.TimingP50, st.TimingP99, st.TimingMax, st.Samples)
	}
	if st.ClockTicks > 0 {
		fmt.Fprintf(e.stdout, "clock topic: %d ticks\n", st.ClockTicks)
	}
	if st.Dropped > 0 {
		fmt.Fprintf(e.stdout, "dropped %d messages too large for the output\n", st.Dropped)
	}
	if interrupted {
		fmt.Fprintln(e.stdout, "interrupted")
	}
}
