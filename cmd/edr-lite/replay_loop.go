package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/replay"
	"github.com/edr-lite/edr-lite/schema"
)

// The closed loop of replay: --expect and the flags around it, declared
// and read here apart from replay's own flags (replay.go).

// loopFlags are the values of the closed-loop flags.
type loopFlags struct {
	expect, collect, listen        multiFlag
	checks, schemas                multiFlag
	mode, timeout, lockstep, align *string
	window, fields, checksFile     *string
	record, format                 *string
	abs, rel                       *float64
	node, nodeTimeout, nodeGrace   *string
	nodeReady                      multiFlag
}

// declareLoopFlags declares them on c.
func declareLoopFlags(c *command) *loopFlags {
	f := &loopFlags{}
	c.fs.Var(&f.expect, "expect", "closed loop: globs of the topics the system under test publishes (its outputs; comma-separated or repeated)")
	c.fs.Var(&f.collect, "collect", "input-only: globs of outputs the recording does not hold, collected under their own names (comma-separated or repeated)")
	f.mode = c.fs.String("mode", "full", "closed loop: full (compare), input-only (record the outputs) or output-only (re-emit the recorded outputs)")
	c.fs.Var(&f.listen, "listen", "closed loop: where the outputs are published, shm:DIR or udp:HOST:PORT[=TOPIC] (repeatable; default the -o shm directory)")
	f.timeout = c.fs.String("timeout", "2s", "closed loop: how long to wait for outputs after the last input, and for each step's answer in lockstep")
	f.lockstep = c.fs.String("lockstep", "", "closed loop: release each input after the previous was answered: ack:GLOB (one message per input on GLOB) or outputs (as many outputs as recorded)")
	c.fs.Var(&f.checks, "check", "closed loop: exact, tolerance or none for every expected topic, or GLOB=MODE for some (repeatable)")
	f.abs = c.fs.Float64("abs", 1e-6, "tolerance: absolute bound of a field's difference")
	f.rel = c.fs.Float64("rel", 1e-6, "tolerance: relative bound (times |recorded|), added to --abs")
	f.align = c.fs.String("align", "seq", "closed loop: pair outputs by seq (k-th with k-th), time (equal producer time) or nearest (in replay time, within --window)")
	f.window = c.fs.String("window", "0", "align nearest: how far apart a pair may be; check none: latency difference allowed (0 = not checked)")
	f.fields = c.fs.String("fields", "", "closed loop: compare only these fields (comma-separated paths; default all)")
	c.fs.Var(&f.schemas, "schema", "closed loop: TOPIC=FILE (a packed layout), TOPIC=FILE@pkg.Message (a protobuf descriptor set) or TOPIC=json (repeatable)")
	f.checksFile = c.fs.String("checks", "", "closed loop: a TOML or JSON file of per-topic checks (see docs/replay.md)")
	f.record = c.fs.String("record", "", "closed loop: write the inputs and the collected outputs to this new dump (.pack or .mcap)")
	f.format = c.fs.String("format", "text", "closed loop report: text or json")
	f.node = c.fs.String("node", "", "closed loop: start the node under test with this command line (sh -c), wait until it is ready, watch it, stop it at the end")
	c.fs.Var(&f.nodeReady, "node-ready", "--node: it is ready once segment:TOPIC exists (in the listened shm directory), udp:PORT is bound, or it prints a line matching line:REGEXP (repeatable: all; default: the expected topics' segments)")
	f.nodeTimeout = c.fs.String("node-timeout", replay.DefaultNodeReadyTimeout.String(), "--node: how long it may take to be ready")
	f.nodeGrace = c.fs.String("node-grace", replay.DefaultNodeGrace.String(), "--node: how long it has to exit after SIGTERM at the end before SIGKILL")
	return f
}

// active reports whether a closed-loop flag was given.
func (f *loopFlags) active() bool { return len(f.expect) > 0 || len(f.collect) > 0 }

// usedWithoutExpect names a closed-loop flag given without --expect.
func (f *loopFlags) usedWithoutExpect(given map[string]bool) string {
	for _, n := range []string{"mode", "listen", "timeout", "lockstep", "check", "abs", "rel", "align", "window", "fields", "schema", "checks", "record", "format",
		"node", "node-ready", "node-timeout", "node-grace"} {
		if given[n] {
			return n
		}
	}
	return ""
}

// options builds the loop options; to is the parsed --to. An error is bad
// usage.
func (f *loopFlags) options(given map[string]bool, to string) (replay.LoopOptions, error) {
	var lo replay.LoopOptions
	for _, e := range f.expect {
		lo.Expect = append(lo.Expect, splitList(e)...)
	}
	for _, e := range f.collect {
		lo.Collect = append(lo.Collect, splitList(e)...)
	}
	var err error
	if lo.Mode, err = replay.ParseMode(*f.mode); err != nil {
		return lo, fmt.Errorf("--mode %q: want full, input-only or output-only", *f.mode)
	}
	if to == "discard" && lo.Mode != replay.ModeOutputOnly {
		return lo, errors.New("-o discard feeds no system under test: give -o shm:DIR or udp:HOST:PORT")
	}
	if lo.Timeout, err = units.ParseDuration(*f.timeout); err != nil || lo.Timeout <= 0 {
		return lo, fmt.Errorf("--timeout %q: want a positive duration like 2s", *f.timeout)
	}
	if *f.format != "text" && *f.format != "json" {
		return lo, fmt.Errorf("--format %q: want text or json", *f.format)
	}
	lo.Record, lo.Writer = *f.record, "edr-lite replay"
	if lo.Mode == replay.ModeOutputOnly {
		for _, n := range []string{"collect", "listen", "lockstep", "record", "check", "checks", "schema", "align", "window", "fields", "abs", "rel",
			"node", "node-ready", "node-timeout", "node-grace"} {
			if given[n] {
				return lo, fmt.Errorf("--%s is not for --mode output-only (it re-emits the recorded outputs, nothing listens or compares)", n)
			}
		}
		return lo, nil
	}
	for _, l := range f.listen {
		ls, err := parseListen(l)
		if err != nil {
			return lo, err
		}
		lo.Listen = append(lo.Listen, ls)
	}
	if len(lo.Listen) == 0 {
		scheme, dir, _ := strings.Cut(to, ":")
		if scheme != "shm" || dir == "" {
			return lo, errors.New("--listen is required when --to is not shm:DIR (where does the system under test publish?)")
		}
		lo.Listen = []replay.Listen{{Shm: dir}}
	}
	switch ls := *f.lockstep; {
	case ls == "":
	case ls == "outputs":
		lo.Lockstep = replay.LockstepOutputs
	case strings.HasPrefix(ls, "ack:") && len(ls) > 4:
		lo.Lockstep, lo.Ack = replay.LockstepAck, ls[4:]
	default:
		return lo, fmt.Errorf("--lockstep %q: want ack:TOPIC or outputs", ls)
	}
	if lo.Checks, err = f.checkList(given); err != nil {
		return lo, err
	}
	if lo.Node, err = f.nodeOptions(given, lo.Listen); err != nil {
		return lo, err
	}
	if len(f.schemas) > 0 {
		lo.Schemas = map[string]replay.TopicSchema{}
		for _, s := range f.schemas {
			topic, spec, ok := strings.Cut(s, "=")
			if !ok || topic == "" || spec == "" {
				return lo, fmt.Errorf("--schema %q: want TOPIC=FILE, TOPIC=FILE@pkg.Message or TOPIC=json", s)
			}
			d, from, err := loadSchema(spec, "")
			if err != nil {
				return lo, fmt.Errorf("--schema %s: %v", topic, err)
			}
			lo.Schemas[topic] = replay.TopicSchema{Decoder: d, From: from}
		}
	}
	return lo, nil
}

// nodeOptions reads --node and its flags (nil without --node).
func (f *loopFlags) nodeOptions(given map[string]bool, listen []replay.Listen) (*replay.NodeOptions, error) {
	if *f.node == "" {
		for _, n := range []string{"node-ready", "node-timeout", "node-grace"} {
			if given[n] {
				return nil, fmt.Errorf("--%s is for the node under test: give --node \"CMD ARGS\"", n)
			}
		}
		return nil, nil
	}
	no := &replay.NodeOptions{Command: *f.node}
	var err error
	if no.ReadyTimeout, err = units.ParseDuration(*f.nodeTimeout); err != nil || no.ReadyTimeout <= 0 {
		return nil, fmt.Errorf("--node-timeout %q: want a positive duration like 10s", *f.nodeTimeout)
	}
	if no.Grace, err = units.ParseDuration(*f.nodeGrace); err != nil || no.Grace <= 0 {
		return nil, fmt.Errorf("--node-grace %q: want a positive duration like 5s", *f.nodeGrace)
	}
	dir := ""
	for _, l := range listen {
		if l.Shm != "" {
			dir = l.Shm
			break
		}
	}
	for _, spec := range f.nodeReady {
		r, err := replay.ParseReady(spec, dir)
		if err != nil {
			return nil, fmt.Errorf("--node-ready: %v", err)
		}
		no.Ready = append(no.Ready, r)
	}
	return no, nil
}

// checkList builds the checks: the checks file's first, then --check
// GLOB=MODE, then the default (--check MODE, exact when not given); the
// flags' --abs, --rel, --align, --window and --fields apply to the last two.
func (f *loopFlags) checkList(given map[string]bool) ([]replay.Check, error) {
	var out []replay.Check
	if *f.checksFile != "" {
		cs, err := config.LoadChecks(*f.checksFile)
		if err != nil {
			return nil, err
		}
		for _, k := range cs.Check {
			ch := replay.Check{Topic: k.Topic, Abs: k.Abs, Rel: k.Rel, Fields: k.Fields, Window: k.Window.D()}
			ch.Mode, _ = replay.ParseCheckMode(k.Mode) // checked by the parser
			ch.Align, _ = replay.ParseAlign(k.Align)
			spec := ""
			switch {
			case k.Layout != "":
				spec = k.Layout
			case k.Protobuf != "":
				spec = k.Protobuf + "@" + k.Message
			case k.JSON:
				spec = "json"
			}
			if spec != "" {
				d, from, err := loadSchema(spec, filepath.Dir(*f.checksFile))
				if err != nil {
					return nil, fmt.Errorf("%s: check of %q: %v", *f.checksFile, k.Topic, err)
				}
				ch.Decoder, ch.Schema = d, from
			}
			out = append(out, ch)
		}
	}
	base := replay.Check{Abs: *f.abs, Rel: *f.rel, Fields: splitList(*f.fields)}
	var err error
	if base.Align, err = replay.ParseAlign(*f.align); err != nil {
		return nil, fmt.Errorf("--align %q: want seq, time or nearest", *f.align)
	}
	if base.Window, err = units.ParseDuration(*f.window); err != nil || base.Window < 0 {
		return nil, fmt.Errorf("--window %q: want a duration like 5ms", *f.window)
	}
	if base.Align == replay.AlignNearest && base.Window == 0 {
		return nil, errors.New("--align nearest needs --window (how far apart a pair may be)")
	}
	if !(*f.abs >= 0) || !(*f.rel >= 0) {
		return nil, errors.New("--abs and --rel must be 0 or more")
	}
	def := base
	for _, c := range f.checks {
		glob, mode, per := strings.Cut(c, "=")
		if !per {
			mode, glob = c, ""
		}
		m, err := replay.ParseCheckMode(mode)
		if err != nil {
			return nil, fmt.Errorf("--check %q: want exact, tolerance or none, or GLOB=MODE", c)
		}
		if !per {
			def.Mode = m
			continue
		}
		ch := base
		ch.Topic, ch.Mode = glob, m
		out = append(out, ch)
	}
	return append(out, def), nil
}

// loadSchema reads a schema spec: FILE (a packed layout), FILE@Message (a
// protobuf FileDescriptorSet) or "json"; relative file names are read in
// dir when given.
func loadSchema(spec, dir string) (schema.Decoder, string, error) {
	if spec == "json" {
		d, err := schema.NewDecoder(schema.Type{MessageEncoding: schema.EncodingJSON})
		return d, "json", err
	}
	file, msg, proto := strings.Cut(spec, "@")
	if dir != "" && !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil, "", err
	}
	if st.Size() > schema.MaxSchemaSize {
		return nil, "", fmt.Errorf("%s is %d bytes, more than a schema may be (%d)", file, st.Size(), schema.MaxSchemaSize)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	if proto {
		d, err := schema.NewDecoder(schema.Type{MessageEncoding: schema.EncodingProtobuf,
			Schema: schema.Schema{Name: msg, Encoding: schema.SchemaProtobuf, Data: data}})
		if err != nil {
			return nil, "", fmt.Errorf("%s: %v", file, err)
		}
		return d, "protobuf " + filepath.Base(file) + " " + msg, nil
	}
	l, err := schema.ParseLayout(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", file, err)
	}
	return l, "layout " + filepath.Base(file), nil
}

// parseListen reads shm:DIR or udp:HOST:PORT[=TOPIC].
func parseListen(s string) (replay.Listen, error) {
	scheme, rest, _ := strings.Cut(s, ":")
	switch {
	case scheme == "shm" && rest != "":
		return replay.Listen{Shm: rest}, nil
	case scheme == "udp" && rest != "":
		addr, topic, _ := strings.Cut(rest, "=")
		return replay.Listen{UDP: addr, Topic: topic}, nil
	}
	return replay.Listen{}, fmt.Errorf("--listen %q: want shm:DIR or udp:HOST:PORT[=TOPIC]", s)
}

// runLoop is replay's closed loop: it opens the dumps, plays the inputs
// to out (or, output-only, the recorded outputs), prints the report and
// returns the exit code.
func runLoop(c *command, f *loopFlags, rf *rosbagFlags, args []string, opts replay.Options, lo replay.LoopOptions, out replay.Output,
	udp *replay.UDPOutput, extra *extraPlayers, rate float64) int {
	if lo.Node != nil {
		lo.Node.Output = c.e.stderr
	}
	l, err := replay.NewLoop(args, opts, lo)
	if err != nil {
		return loopFailed(c, f, nil, lo, 0, err)
	}
	defer l.Close()
	if extra != nil {
		for i, p := range extra.players {
			if err := l.AddPlayer(p, extra.pouts[i]); err != nil {
				return loopFailed(c, f, nil, lo, 0, err)
			}
		}
		for i, lv := range extra.lives {
			if err := l.AddLive(lv, extra.louts[i]); err != nil {
				return loopFailed(c, f, nil, lo, 0, err)
			}
		}
		opts.Rate = rate
	}
	if udp != nil {
		out = announce{udp, c.e}
	}
	stopCtl, err := rf.serveControl(l.Player())
	if err != nil {
		return c.fail(err)
	}
	defer stopCtl()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done, finished := make(chan struct{}), make(chan struct{})
	if isTerminal(c.e.stderr) {
		showProgress(c.e, l.Player(), false, done, finished)
	} else {
		close(finished)
	}
	res, err := l.Run(ctx, out)
	close(done)
	<-finished // the bar's last line before the report
	interrupted := ctx.Err() != nil && errors.Is(err, ctx.Err())
	if interrupted {
		err = nil
	}
	if err != nil {
		return loopFailed(c, f, res, lo, opts.Rate, err)
	}
	res.Error = failure(res, lo, interrupted)
	if *f.format == "json" {
		if jerr := printLoopJSON(c, res); jerr != nil {
			return c.fail(jerr)
		}
	} else {
		printLoopReport(c.e.stdout, res, lo, opts.Rate, interrupted)
	}
	if res.Error != "" {
		return exitFail
	}
	return exitOK
}

// failure says why a closed loop that ran to its end failed ("" when it
// did not): mismatches, outputs lost, or an interrupted comparison.
func failure(res *replay.LoopResult, lo replay.LoopOptions, interrupted bool) string {
	n := len(res.Mismatches) + res.MismatchesNotListed
	switch {
	case res.OK && !(interrupted && lo.Mode == replay.ModeFull):
		return ""
	case n > 0:
		return fmt.Sprintf("%d mismatches between the outputs and the recording", n)
	case !res.OK:
		return "outputs were lost before they could be compared"
	}
	return "interrupted before every output was compared"
}

// loopFailed reports an error that stopped a closed loop: on stderr, as
// every verb does (bad usage, exit 2, for an option the dumps refuse), and
// with --format json also in the report on stdout ("ok": false, "error":
// why; res is what the run found before, when it got that far), so that
// CI reading the JSON sees the reason.
func loopFailed(c *command, f *loopFlags, res *replay.LoopResult, lo replay.LoopOptions, rate float64, err error) int {
	if *f.format == "json" {
		if res == nil {
			res = &replay.LoopResult{Mode: lo.Mode.String(), Mismatches: []replay.Mismatch{}}
		}
		res.OK, res.Error = false, userError(err.Error())
		if jerr := printLoopJSON(c, res); jerr != nil {
			return c.fail(jerr)
		}
	} else if res != nil {
		printLoopReport(c.e.stdout, res, lo, rate, false)
	}
	if errors.Is(err, replay.ErrOptions) {
		return c.usageErr("%v", err)
	}
	return c.fail(err)
}

// printLoopJSON prints the report as one JSON object.
func printLoopJSON(c *command, res *replay.LoopResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.e.stdout, "%s\n", b)
	return err
}

// printNodeReport prints what became of the node under test: ready after
// how long, and how it ended (a crash with the last lines of its stderr).
func printNodeReport(w io.Writer, n *replay.NodeReport) {
	if n == nil {
		return
	}
	ready := "never ready"
	if n.Ready != "" {
		ready = fmt.Sprintf("ready after %s (%s)", time.Duration(n.ReadyNs).Round(time.Millisecond), n.Ready)
	}
	end := n.Exit
	if n.Exited {
		end = fmt.Sprintf("EXITED on its own after %d inputs: %s", n.Inputs, n.Exit)
	}
	fmt.Fprintf(w, "node under test: %s (pid %d): %s; %s\n", n.Command, n.PID, ready, end)
	if n.Exited {
		fmt.Fprintln(w, "  the last lines of its stderr:")
		for _, l := range n.Stderr {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

// printLoopReport prints a closed loop's result as text.
func printLoopReport(w io.Writer, res *replay.LoopResult, lo replay.LoopOptions, rate float64, interrupted bool) {
	pace := "as fast as possible"
	if rate > 0 {
		pace = fmt.Sprintf("rate %g", rate)
	}
	if lo.Lockstep != replay.LockstepOff {
		pace += ", lockstep " + res.Lockstep
		if lo.Ack != "" {
			pace += " on " + lo.Ack
		}
	}
	if lo.Mode == replay.ModeOutputOnly {
		st := &res.Stats
		fmt.Fprintf(w, "output-only: re-emitted %d recorded outputs, %s in %s (%s)\n", st.Messages, units.FormatSize(int64(st.Bytes)),
			st.Elapsed.Round(time.Millisecond), pace)
	} else {
		var ls []string
		for _, l := range lo.Listen {
			ls = append(ls, l.String())
		}
		fmt.Fprintf(w, "closed loop (%s): %d inputs in %s (%s); outputs from %s\n", res.Mode, res.Inputs,
			res.Stats.Elapsed.Round(time.Millisecond), pace, strings.Join(ls, ", "))
	}
	if t := res.Timing; t.Samples > 0 {
		fmt.Fprintf(w, "timing error: p50 %s, p99 %s, max %s over %d messages\n", time.Duration(t.P50Ns), time.Duration(t.P99Ns), time.Duration(t.MaxNs), t.Samples)
	}
	printNodeReport(w, res.Node)
	if lo.Mode == replay.ModeOutputOnly {
		if interrupted {
			fmt.Fprintln(w, "interrupted")
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  topic\tcheck\talign\trecorded\tgot\tmatched\tdiffering\tmissing\textra\tlatency p50 / p99 / max")
	for _, t := range res.Topics {
		name := t.Topic
		if t.Published != "" {
			name += " (as " + t.Published + ")"
		}
		lat := "-"
		if t.Latency.Samples > 0 {
			lat = fmt.Sprintf("%s / %s / %s", time.Duration(t.Latency.P50Ns), time.Duration(t.Latency.P99Ns), time.Duration(t.Latency.MaxNs))
		}
		if lo.Mode == replay.ModeInputOnly {
			fmt.Fprintf(tw, "  %s\t-\t-\t%d\t%d\t-\t-\t-\t-\t%s\n", name, t.Recorded, t.Got, lat)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", name, t.Check, t.Align, t.Recorded, t.Got, t.Matched, t.Differing, t.Missing, t.Extra, lat)
	}
	tw.Flush()
	for _, t := range res.Topics {
		if t.Schema != "" {
			fmt.Fprintf(w, "  %s decoded with %s\n", t.Topic, t.Schema)
		}
		if t.BeforeFirstInput > 0 || t.PublishedBeforeFirst > 0 {
			fmt.Fprintf(w, "  %s: %d recorded and %d published before the first input, not compared\n", t.Topic, t.BeforeFirstInput, t.PublishedBeforeFirst)
		}
		if t.PublishedAfterEnd > 0 {
			fmt.Fprintf(w, "  %s: %d published after the end of the recording without a recorded counterpart, not compared\n", t.Topic, t.PublishedAfterEnd)
		}
	}
	if l := res.Latency; l.Samples > 0 {
		fmt.Fprintf(w, "latency from input to output: p50 %s, p99 %s, max %s over %d outputs\n", time.Duration(l.P50Ns), time.Duration(l.P99Ns), time.Duration(l.MaxNs), l.Samples)
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if res.Record != "" {
		fmt.Fprintf(w, "recorded to %s\n", res.Record)
	}
	if interrupted {
		fmt.Fprintln(w, "interrupted")
	}
	if lo.Mode != replay.ModeFull {
		return
	}
	if n := len(res.Mismatches) + res.MismatchesNotListed; n > 0 {
		fmt.Fprintf(w, "mismatches (%d):\n", n)
		for _, m := range res.Mismatches {
			fmt.Fprintf(w, "  %s\n", m.String())
		}
		if res.MismatchesNotListed > 0 {
			fmt.Fprintf(w, "  ... and %d more, not listed\n", res.MismatchesNotListed)
		}
		fmt.Fprintf(w, "FAIL: %d mismatches between the outputs and the recording\n", n)
		return
	}
	if !res.OK {
		fmt.Fprintln(w, "FAIL: outputs were lost before they could be compared")
		return
	}
	n := 0
	for _, t := range res.Topics {
		n += t.Matched
	}
	fmt.Fprintf(w, "ok: %d outputs on %d topic(s) match the recording\n", n, len(res.Topics))
}
