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
	replayUsage = "edr-lite replay FILE... --to shm:DIR | udp:HOST:PORT | discard [--rate F | --asfast] [--loop] [--topics G,...] [--start D] [--duration D]"
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
stops cleanly and prints the summary.`
	replayExample = "edr-lite replay dump.pack --to shm:/dev/shm/edr --rate 1\nedr-lite replay a.pack b.mcap --to udp:127.0.0.1:30000 --topics 'vehicle/*' --start 10s --duration 5s --loop"
)

// runReplay is the replay verb: it reads the flags, opens the dumps and
// the output, and plays them.
func runReplay(e *env) int {
	c := newCommand(e, "replay", replayUsage, replayHelp, replayExample, 1, -1)
	f := declareReplayFlags(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	opts, err := f.options(c.fs)
	if err != nil {
		return c.usageErr("%v", err)
	}
	out, udp, err := f.output()
	if err != nil {
		return c.usageErr("%v", err)
	}
	p, err := replay.Open(args, opts)
	if err != nil {
		if errors.Is(err, replay.ErrOptions) {
			return c.usageErr("%v", err)
		}
		return c.fail(err)
	}
	defer p.Close()
	if len(p.Topics()) == 0 {
		if *f.topics == "" {
			return c.fail(fmt.Errorf("%s: no message to replay", strings.Join(args, ", ")))
		}
		return c.fail(fmt.Errorf("%s: no topic matches --topics %q", strings.Join(args, ", "), *f.topics))
	}
	if udp != nil {
		out = announce{udp, e}
	}
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
	if st.Dropped > 0 {
		fmt.Fprintf(e.stdout, "dropped %d messages too large for the output\n", st.Dropped)
	}
	if interrupted {
		fmt.Fprintln(e.stdout, "interrupted")
	}
}
