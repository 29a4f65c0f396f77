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

	"github.com/schollz/progressbar/v3"

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
	replayUsage = "edr-lite replay FILE... --to shm:DIR | udp:HOST:PORT | discard [--rate F | --asfast] [--loop | --loop-count N] [--topics G,...] [--exclude G,...] [--start D] [--duration D] [--delay D] [--remap OLD=NEW] [--clock HZ] [--start-paused] [--control SOCK]\nedr-lite replay DUMP... --to shm:DIR|udp:HOST:PORT --expect GLOB [--mode full|input-only|output-only] [--listen shm:DIR|udp:HOST:PORT=TOPIC] [--check MODE|GLOB=MODE] [--schema TOPIC=FILE] [--checks FILE] [--align seq|time|nearest] [--lockstep ack:TOPIC|outputs] [--timeout D] [--record OUT] [--format text|json]"
	replayHelp  = `Replay dumps, pack or MCAP in any mix, merged message by message in
capture-time order, into a live system: the payload bytes exactly as
recorded. An MCAP file (a dump written with format = "mcap", an export, a
file of another tool) is read in log_time order: each channel is a topic
(edr-lite's name, channel and type, or the channel's topic and schema name),
log_time the capture time and publish_time the producer time.

  --to shm:DIR       one shared-memory segment per topic in DIR (an edr-lite
                     recorder or any shm consumer watching DIR picks them up);
                     the topic's name, channel, type and producer times are
                     carried over.
  --to udp:HOST:PORT one datagram per message; the i-th topic in sorted topic
                     order goes to HOST:PORT+i (the mapping is printed), or
                     where --map TOPIC=HOST:PORT says.
  --to discard       drop everything (measures replay speed).

Timing: --rate 1 (the default) keeps the recorded gaps between messages,
--rate 2 plays twice as fast, --rate 0.5 at half speed, --asfast does not wait.
The summary gives messages, bytes, msg/s and, in timed modes, how late
messages were handed over (timing error p50 / p99). Messages too large for
the output (a UDP datagram, half a segment) are dropped and counted. Ctrl-C
stops cleanly and prints the summary.

rosbag2's "ros2 bag play" flags: --exclude (-x), --delay (-d, before each
pass), --start-paused (-p, with --control SOCK: step and resume with
"edr-lite replay-ctl"), --playback-duration (= --duration), --remap
OLD=NEW (OLD:=NEW also works), --clock HZ (a clock topic, payload the
message time as i64le ns, ticking every 1/HZ of message time), --loop (-l)
and --loop-count N.

Closed loop, to test a node against a recording: --expect GLOB names the
topics the system under test publishes (its outputs); every other topic is
an input. --mode full (the default) publishes the inputs, collects what the
node publishes on the expected topics (from the --to shm directory, or
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
first input are not compared. --mode input-only collects without comparing
(--record FILE writes inputs and outputs to a new dump); --mode output-only
re-emits the recorded outputs with their timing. --lockstep ack:TOPIC (one
message per input on TOPIC, which may be the output itself) or outputs
(as many outputs as the recording holds) releases each input only once the
node answered the ones before: deterministic even when the node is slower
than real time. --timeout bounds every wait for the node. The report gives
the latency from input to output (p50, p99, max).

Several players on one timeline: --player TO=DUMP[,DUMP] replays more dumps
to another output, --live udp:HOST:PORT=TOPIC forwards datagrams received
while replaying to --to as TOPIC. One orchestrator gives them turns by
message time; equal times go to the player named first (the main dumps,
then each --player, then each --live). With --expect they are all inputs,
and lockstep waits for the answer to each before the next of any player.`
	replayExample = "edr-lite replay dump.pack --to shm:/dev/shm/edr --rate 1\nedr-lite replay a.pack b.mcap --to udp:127.0.0.1:30000 --topics 'vehicle/*' --start 10s --duration 5s --loop\nedr-lite replay dump.pack --to shm:/dev/shm/edr --exclude 'camera/*' --remap vehicle/speed=sim/speed --clock 100 --loop-count 3\nedr-lite replay dump.pack --to shm:/dev/shm/edr --start-paused --control /tmp/replay.sock\nedr-lite replay drive.pack --to shm:/dev/shm/edr --expect 'planner/*' --asfast --lockstep ack:planner/brake\nedr-lite replay drive.pack --to shm:/dev/shm/edr --expect planner/brake --check tolerance --schema planner/brake=brake.layout --format json"
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
	if err := rf.apply(c.fs, &opts); err != nil {
		return c.usageErr("%v", err)
	}
	out, udp, err := f.output()
	if err != nil {
		return c.usageErr("%v", err)
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
		capacity := 0
		if *f.capacity != "" {
			n, _ := units.ParseSize(*f.capacity) // checked by f.output
			capacity = int(n)
		}
		if extra, err = openExtra(o, ps, ls, *f.to, capacity); err != nil {
			if errors.Is(err, replay.ErrOptions) {
				return c.usageErr("%v", err)
			}
			return c.fail(err)
		}
		defer extra.close()
	}
	if lf.active() {
		lo, err := lf.options(given, *f.to)
		if err != nil {
			return c.usageErr("%v", err)
		}
		return runLoop(c, lf, rf, args, opts, lo, out, udp, extra, rate)
	}
	if n := lf.usedWithoutExpect(given); n != "" {
		return c.usageErr("--%s is for a closed loop: give --expect with the topics the system under test publishes", n)
	}
	p, err := replay.Open(args, opts)
	if err != nil {
		if errors.Is(err, replay.ErrOptions) {
			return c.usageErr("%v", err)
		}
		return c.fail(err)
	}
	defer p.Close()
	if len(p.Topics()) == 0 || (opts.ClockHz > 0 && len(p.Topics()) == 1) {
		return c.fail(fmt.Errorf("no topic of the dumps matches --topics %q without --exclude %q", *f.topics, strings.Join(opts.Exclude, ",")))
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
	return play(c, p, out, opts.Rate)
}

// replayFlags are the values of replay's flags.
type replayFlags struct {
	to, topics, start, duration, capacity, spin *string
	rate                                        *float64
	asfast, loop                                *bool
	maps                                        multiFlag
}

// declareReplayFlags declares replay's flags on c.
func declareReplayFlags(c *command) *replayFlags {
	f := &replayFlags{}
	f.to = c.fs.String("to", "", "output: shm:DIR, udp:HOST:PORT or discard (required)")
	f.rate = c.fs.Float64("rate", 1, "timing: 1 = real time, 2 = twice as fast, 0.5 = half speed")
	f.asfast = c.fs.Bool("asfast", false, "replay as fast as possible (no waiting)")
	f.loop = c.fs.Bool("loop", false, "start over at the end, until interrupted")
	f.topics = c.fs.String("topics", "", "comma-separated topic globs (path.Match syntax, over name#channel and name); empty = all")
	f.start = c.fs.String("start", "0", "skip this much message time from the first message (e.g. 10s)")
	f.duration = c.fs.String("duration", "0", "replay this much message time (0 = to the end)")
	f.capacity = c.fs.String("capacity", "", "shm: ring size of each segment (default 1MiB)")
	f.spin = c.fs.String("spin", "0", "timed modes: poll the clock for this long before each due time instead of sleeping (e.g. 200us; costs a core)")
	c.fs.Var(&f.maps, "map", "udp: TOPIC=HOST:PORT sends TOPIC there instead (repeatable)")
	return f
}

// options checks the selection and timing flags (fs says whether --rate
// was given) and returns them as replay.Options. An error is bad usage.
func (f *replayFlags) options(fs *flag.FlagSet) (replay.Options, error) {
	opts := replay.Options{Topics: splitList(*f.topics), Rate: *f.rate, Loop: *f.loop}
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
	var err error
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
	scheme, rest, _ := strings.Cut(*f.to, ":")
	switch {
	case *f.to == "":
		return nil, nil, errors.New("--to is required (shm:DIR, udp:HOST:PORT or discard)")
	case scheme == "shm" && rest != "":
		so := replay.ShmOptions{Dir: rest}
		if *f.capacity != "" {
			n, err := units.ParseSize(*f.capacity)
			if err != nil {
				return nil, nil, fmt.Errorf("--capacity: %v", err)
			}
			so.Capacity = int(n)
		}
		out = replay.NewShm(so)
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
	case *f.to == "discard":
		out = replay.Discard{}
	default:
		return nil, nil, fmt.Errorf("--to %q: want shm:DIR, udp:HOST:PORT or discard", *f.to)
	}
	if len(f.maps) > 0 && udp == nil {
		return nil, nil, errors.New("--map is for --to udp:HOST:PORT")
	}
	return out, udp, nil
}

// play runs p into out until it ends, fails or is interrupted (Ctrl-C,
// SIGTERM: not a failure), with a progress bar on a terminal, prints the
// summary and returns the exit code.
func play(c *command, p *replay.Player, out replay.Output, rate float64) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	if isTerminal(c.e.stderr) {
		showProgress(c.e, p, done)
	}
	st, err := p.Run(ctx, out)
	close(done)
	interrupted := ctx.Err() != nil && errors.Is(err, ctx.Err())
	if interrupted {
		err = nil
	}
	printReplaySummary(c.e, &st, rate, interrupted)
	if err != nil {
		return c.fail(err)
	}
	return exitOK
}

// showProgress starts a goroutine drawing a progress bar of the message
// time replayed on e.stderr, updated every 100 ms, until done is closed.
func showProgress(e *env, p *replay.Player, done <-chan struct{}) {
	from, to := p.Range()
	bar := progressbar.NewOptions64(max((to-from)/1e6, 1), progressbar.OptionSetWriter(e.stderr),
		progressbar.OptionSetDescription("replaying (ms of message time)"), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				bar.Finish()
				return
			case <-t.C:
				if _, _, pos := p.Progress(); pos >= from {
					bar.Set64(min((pos-from)/1e6, bar.GetMax64()))
				}
			}
		}
	}()
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

func printReplaySummary(e *env, st *replay.Stats, rate float64, interrupted bool) {
	mode := "as fast as possible"
	if rate > 0 {
		mode = fmt.Sprintf("rate %g", rate)
	}
	fmt.Fprintf(e.stdout, "replayed %d messages, %s in %s (%s, %d pass(es)): %.0f msg/s, %s/s\n",
		st.Messages, units.FormatSize(int64(st.Bytes)), st.Elapsed.Round(time.Millisecond), mode, st.Passes,
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
