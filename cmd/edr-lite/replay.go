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

func runReplay(e *env) int {
	c := newCommand(e, "replay", "edr-lite replay FILE... --to shm:DIR | udp:HOST:PORT | discard [--rate F | --asfast] [--loop] [--topics G,...] [--start D] [--duration D]",
		`Replay dumps, pack or MCAP in any mix, merged message by message in
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
stops cleanly and prints the summary.`,
		"edr-lite replay dump.pack --to shm:/dev/shm/edr --rate 1\nedr-lite replay a.pack b.mcap --to udp:127.0.0.1:30000 --topics 'vehicle/*' --start 10s --duration 5s --loop", 1, -1)
	to := c.fs.String("to", "", "output: shm:DIR, udp:HOST:PORT or discard (required)")
	rate := c.fs.Float64("rate", 1, "timing: 1 = real time, 2 = twice as fast, 0.5 = half speed")
	asfast := c.fs.Bool("asfast", false, "replay as fast as possible (no waiting)")
	loop := c.fs.Bool("loop", false, "start over at the end, until interrupted")
	topics := c.fs.String("topics", "", "comma-separated topic globs (path.Match syntax, over name#channel and name); empty = all")
	start := c.fs.String("start", "0", "skip this much message time from the first message (e.g. 10s)")
	duration := c.fs.String("duration", "0", "replay this much message time (0 = to the end)")
	capacity := c.fs.String("capacity", "", "shm: ring size of each segment (default 1MiB)")
	spin := c.fs.String("spin", "0", "timed modes: poll the clock for this long before each due time instead of sleeping (e.g. 200us; costs a core)")
	var maps multiFlag
	c.fs.Var(&maps, "map", "udp: TOPIC=HOST:PORT sends TOPIC there instead (repeatable)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	opts := replay.Options{Topics: splitList(*topics), Rate: *rate, Loop: *loop}
	rateSet := false
	c.fs.Visit(func(f *flag.Flag) { rateSet = rateSet || f.Name == "rate" })
	switch {
	case *asfast && rateSet:
		return c.usageErr("--rate and --asfast exclude each other")
	case *asfast:
		opts.Rate = 0
	case *rate <= 0:
		return c.usageErr("--rate %v: must be positive (use --asfast for no waiting)", *rate)
	}
	var err error
	if opts.Start, err = units.ParseDuration(*start); err != nil || opts.Start < 0 {
		return c.usageErr("--start %q: want a duration like 10s", *start)
	}
	if opts.Duration, err = units.ParseDuration(*duration); err != nil || opts.Duration < 0 {
		return c.usageErr("--duration %q: want a duration like 5s", *duration)
	}
	if opts.Spin, err = units.ParseDuration(*spin); err != nil || opts.Spin < 0 {
		return c.usageErr("--spin %q: want a duration like 200us", *spin)
	}
	var out replay.Output
	var udp *replay.UDPOutput
	scheme, rest, _ := strings.Cut(*to, ":")
	switch {
	case *to == "":
		return c.usageErr("--to is required (shm:DIR, udp:HOST:PORT or discard)")
	case scheme == "shm" && rest != "":
		so := replay.ShmOptions{Dir: rest}
		if *capacity != "" {
			n, err := units.ParseSize(*capacity)
			if err != nil {
				return c.usageErr("--capacity: %v", err)
			}
			so.Capacity = int(n)
		}
		out = replay.NewShm(so)
	case scheme == "udp" && rest != "":
		uo := replay.UDPOptions{Base: rest, Map: map[string]string{}}
		for _, m := range maps {
			k, v, ok := strings.Cut(m, "=")
			if !ok || k == "" || v == "" {
				return c.usageErr("--map %q: want TOPIC=HOST:PORT", m)
			}
			uo.Map[k] = v
		}
		udp = replay.NewUDP(uo)
		out = udp
	case *to == "discard":
		out = replay.Discard{}
	default:
		return c.usageErr("--to %q: want shm:DIR, udp:HOST:PORT or discard", *to)
	}
	if len(maps) > 0 && udp == nil {
		return c.usageErr("--map is for --to udp:HOST:PORT")
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
		return c.fail(fmt.Errorf("no topic of the dumps matches --topics %q", *topics))
	}
	if udp != nil {
		out = announce{udp, e}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	if isTerminal(e.stderr) {
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
	st, err := p.Run(ctx, out)
	close(done)
	interrupted := ctx.Err() != nil && errors.Is(err, ctx.Err())
	if interrupted {
		err = nil
	}
	printReplaySummary(e, &st, opts.Rate, interrupted)
	if err != nil {
		return c.fail(err)
	}
	return exitOK
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
