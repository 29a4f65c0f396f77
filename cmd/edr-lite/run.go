package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/units"
)

const defaultSocket = defaults.ControlSocket

func init() {
	register(&verb{name: "run", summary: "run the recorder daemon from a configuration file", run: runRun})
	register(&verb{name: "trigger", summary: "ask a running recorder for a dump and print its path", run: runTrigger})
	register(&verb{name: "status", summary: "show a running recorder's topics, windows, drops and dumps", run: runStatus})
	register(&verb{name: "reload", summary: "reload a running recorder's Lua rules", run: runReload})
}

func runRun(e *env) int {
	c := newCommand(e, "run", "edr-lite run --config FILE",
		`Run the recorder: read the configuration (see "edr-lite config init"), start
its sources (shared memory, UDP, raw Ethernet), rules and control socket, and
record until stopped.

Signals: SIGUSR1 triggers a manual dump; SIGHUP reloads the rules (a broken
new version keeps the old one running); SIGINT / SIGTERM stop gracefully,
finishing a pending dump within recorder.stop_deadline.`,
		"edr-lite config init > edr.toml && $EDITOR edr.toml\nedr-lite run --config edr.toml --log-format json", 0, 0)
	cfgPath := c.fs.String("config", "", "configuration file (TOML; required)")
	c.withLogFlags()
	_, code, ok := c.parse()
	if !ok {
		return code
	}
	if *cfgPath == "" {
		return c.usageErr("--config FILE is required (start from \"edr-lite config init\")")
	}
	cfg, err := daemon.Load(*cfgPath) // the same checks as "config check"
	if err != nil {
		return c.failConfig(*cfgPath, err)
	}
	log := c.logger()
	// before anything starts: a SIGTERM during the start stops the
	// recorder gracefully once it runs, instead of killing it
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if w := daemon.SecretsWarning(*cfgPath, cfg); w != "" {
		log.Warn("configuration file readable by every local user: " + w)
	}
	d, err := daemon.New(daemon.Options{Config: cfg, Logger: log, Version: "edr-lite"})
	if err != nil {
		return c.fail(err)
	}
	if err := d.Start(); err != nil {
		d.Stop()
		return c.fail(err)
	}
	if cfg.Control.Socket != "" {
		log.Info("control socket", "path", cfg.Control.Socket)
	}
	if a := d.HTTPAddr(); a != "" {
		log.Info("http", "addr", "http://"+a, "paths", strings.Join(d.HTTPPaths(), " "))
	}
	for s := range sigs {
		switch s {
		case syscall.SIGUSR1:
			id, _, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "manual", Source: dumpinfo.SourceSignal}, false)
			if err != nil {
				log.Warn("SIGUSR1 trigger refused (counted in status)", "err", err)
			} else {
				log.Info("SIGUSR1 trigger accepted", "id", id)
			}
		case syscall.SIGHUP:
			if err := d.Reload(); err != nil {
				log.Error("rule reload", "err", err)
			} else {
				log.Info("rules reloaded")
			}
		default:
			log.Info("stopping", "signal", s.String(), "deadline", cfg.Recorder.StopDeadline.D())
			d.Stop()
			return exitOK
		}
	}
	return exitOK
}

func runTrigger(e *env) int {
	c := newCommand(e, "trigger", "edr-lite trigger [--socket S] [--reason R] [--pre D] [--post D] [--at now|last] [--topics G,...] [--tag T]",
		`Ask the recorder listening on the control socket for a dump around now (or,
with --at last, around the newest message of the selected topics: a dump asked
for after the producers went silent holds their last window). By default it
waits until the dump file is finalized (the post window plus the write) and
prints its path on stdout; on stderr it says what happened: the size, every
trigger the dump holds with its reason, source and window (when this trigger
was merged into a dump another trigger started, that dump's path and both
reasons), the window covered and the losses in it. The trigger is recorded in
the dump with source "command".

--pre and --post default to the configured windows ([recorder] pre and post,
and [[topic]] overrides); "0s" is a zero window. Operators' triggers have their
own rate limit (max_manual_dumps_per_minute), apart from the rules'. Exit 1
when the recorder refused the trigger (the reason is printed, and counted in
status) or the dump failed.`,
		"edr-lite trigger --socket /run/edr-lite.sock --reason lane-departure --pre 20s --post 5s\nedr-lite trigger --reason camera-only --topics 'camera/*' --post 0s\nedr-lite trigger --reason after-crash --at last", 0, 0)
	sock := c.fs.String("socket", defaults.ControlSocket, "control socket of the running recorder")
	reason := c.fs.String("reason", "manual", "reason recorded in the dump and its file name")
	pre := c.fs.String("pre", "", "history before the trigger to keep (default: the configured windows)")
	post := c.fs.String("post", "", "time after the trigger to keep (default: the configured windows; 0s: none)")
	at := c.fs.String("at", "now", "when the trigger is: now, or last (the newest message of the selected topics)")
	topics := c.fs.String("topics", "", "comma-separated topic globs to dump (default: all)")
	tag := c.fs.String("tag", "", "free-text tag recorded with the trigger")
	noWait := c.fs.Bool("no-wait", false, "return once the trigger is accepted, without waiting for the file")
	timeout := c.fs.Duration("timeout", 5*time.Minute, "give up waiting for the dump after this long")
	_, code, ok := c.parse()
	if !ok {
		return code
	}
	for _, d := range []struct{ n, v string }{{"pre", *pre}, {"post", *post}} {
		if d.v != "" {
			if v, err := units.ParseDuration(d.v); err != nil || v < 0 {
				return c.usageErr("--%s %q: want a duration like 10s (0s for none)", d.n, d.v)
			}
		}
	}
	switch *at {
	case "now":
		*at = dumpinfo.AtNow
	case "last":
		*at = dumpinfo.AtLast
	default:
		return c.usageErr("--at %q: want now or last", *at)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	resp, err := control.Do(ctx, *sock, &control.Request{Op: "trigger", Reason: *reason, Pre: *pre, Post: *post, At: *at,
		Topics: splitList(*topics), Tag: *tag, NoWait: *noWait, Timeout: timeout.String()})
	if err != nil {
		if resp != nil && resp.Dump != nil {
			printTriggerDump(e.stderr, resp)
		}
		return c.fail(err)
	}
	if *noWait {
		fmt.Fprintf(e.stdout, "trigger %d accepted\n", resp.ID)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s\n", resp.Path)
	if resp.Dump == nil {
		fmt.Fprintf(e.stderr, "trigger %d: %s written\n", resp.ID, units.FormatSize(resp.Bytes))
		return exitOK
	}
	printTriggerDump(e.stderr, resp)
	return exitOK
}

// printTriggerDump says what became of a trigger: the dump it ended in
// (merged or not), every trigger that dump holds with its window, the
// window covered and the losses in it.
func printTriggerDump(w io.Writer, resp *control.Response) {
	d := resp.Dump
	if d.Merged && len(d.Triggers) > 0 {
		first := d.Triggers[0]
		fmt.Fprintf(w, "trigger %d merged into the dump of trigger %d (%s, %s):\n", resp.ID, first.ID, first.Reason, first.Source)
	} else {
		fmt.Fprintf(w, "trigger %d:\n", resp.ID)
	}
	if resp.Path != "" {
		fmt.Fprintf(w, "  dump     %s, %s, %d messages (%s)\n", resp.Path, units.FormatSize(resp.Bytes), d.Messages, d.Status)
	} else {
		fmt.Fprintf(w, "  dump     not written (%s)\n", d.Status)
	}
	fmt.Fprintf(w, "  window   %s to %s (%s)\n", fmtTime(d.StartNs), fmtTime(d.EndNs), fmtDur(d.EndNs-d.StartNs))
	for _, t := range d.Triggers {
		src := t.Source
		if t.Rule != "" {
			src += ":" + t.Rule
		}
		mark := " "
		if t.ID == resp.ID {
			mark = "*"
		}
		fmt.Fprintf(w, "  %s reason %-16s source=%s at %s window %s\n", mark, t.Reason, src, fmtTime(t.TimeNs), triggerWindow(&t))
	}
	fmt.Fprintf(w, "  lost     overwritten %d, lost at source %d, oversize %d, skipped busy %d\n",
		d.Overwritten, d.LostAtSource, d.Oversize, d.SkippedBusy)
	if d.Late > 0 {
		fmt.Fprintf(w, "  late     %d written out of event-time order (beyond the reorder bound)\n", d.Late)
	}
}

func runReload(e *env) int {
	c := newCommand(e, "reload", "edr-lite reload [--socket S]",
		`Reload the Lua rules of the recorder listening on the control socket (as
SIGHUP does). A rule whose new version fails to load keeps running its old
version; the error is printed and the exit status is 1.`,
		"edr-lite reload --socket /run/edr-lite.sock", 0, 0)
	sock := c.fs.String("socket", defaultSocket, "control socket of the running recorder")
	_, code, ok := c.parse()
	if !ok {
		return code
	}
	if _, err := control.Do(context.Background(), *sock, &control.Request{Op: "reload"}); err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(e.stdout, "rules reloaded")
	return exitOK
}

func runStatus(e *env) int {
	c := newCommand(e, "status", "edr-lite status [--socket S] [--json]",
		`Show the running recorder's state: cache use, dumps (written, failed,
refused, pending), triggers (coalesced; rate-limited and refused, the rules'
and the operators' apart), and per topic the rate, the window actually held,
and drops by cause; per rule, the window its dumps use (its own or the
recorder's), messages, triggers, lag and errors.`,
		"edr-lite status --socket /run/edr-lite.sock\nedr-lite status --json | jq '.topics[] | {name, held_seconds}'", 0, 0)
	sock := c.fs.String("socket", defaultSocket, "control socket of the running recorder")
	asJSON := c.fs.Bool("json", false, "print the status document as JSON")
	_, code, ok := c.parse()
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := control.Do(ctx, *sock, &control.Request{Op: "status"})
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		fmt.Fprintf(e.stdout, "%s\n", resp.Status)
		return exitOK
	}
	var st daemon.Status
	if err := json.Unmarshal(resp.Status, &st); err != nil {
		return c.fail(fmt.Errorf("bad status document: %w", err))
	}
	w := e.stdout
	fmt.Fprintf(w, "uptime:  %s\n", time.Duration(st.UptimeS*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(w, "cache:   %s used of %s (largest free block %s)\n", units.FormatSize(st.Arena.Used),
		units.FormatSize(st.Arena.Total), units.FormatSize(st.Arena.LargestFree))
	dm := st.Dumps
	fmt.Fprintf(w, "dumps:   %d written, %d failed, %d refused (low disk), %d pending, dumping=%v; rotated %d%s\n",
		dm.Written, dm.Failed, dm.RefusedDisk, dm.Pending, dm.Dumping, dm.Rotated, rotatedFor(dm.RotatedFor))
	fmt.Fprintf(w, "triggers: coalesced %d; rules: rate-limited %d, refused %d; manual: rate-limited %d, refused %d\n",
		dm.Coalesced, dm.RateLimited, dm.RuleRefused, dm.ManualRateLimited, dm.ManualRefused)
	if dm.LastError != "" {
		fmt.Fprintf(w, "last dump error: %s\n", userError(dm.LastError))
	}
	for _, t := range dm.LeftoverTmp {
		fmt.Fprintf(w, "leftover incomplete dump: %s (salvage with edr-lite recover %s -o %s)\n", t, t, dump.LeftoverName(t))
	}
	if n := len(dm.LeftoverRemoved); n > 0 {
		fmt.Fprintf(w, "leftovers removed at start: %d empty (nothing to salvage)\n", n)
	}
	if dm.SigningKey != "" {
		fmt.Fprintf(w, "signing: key %s, chain %s at #%d", dm.SigningKey, dm.Chain, dm.ChainHead)
		if dm.ChainErrors > 0 {
			fmt.Fprintf(w, ", %d chain error(s) (see the last dump error)", dm.ChainErrors)
		}
		fmt.Fprintln(w)
	}
	if st.Upload != nil {
		printUploadStatus(w, st.Upload)
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "\nTOPIC\tONLINE\tRATE\tHELD\tWINDOW\tOVERSIZE\tLOST\tSRC-LOST\tEVICTED(size)\tTYPE\tSOURCE\n")
	var typeErrs []string
	for _, t := range st.Topics {
		name := t.Name
		if t.Channel != "" {
			name += "#" + t.Channel
		}
		typ := t.Encoding
		if t.Type != "" {
			typ += " " + t.Type
		}
		if t.TypeError != "" {
			typ += " (!)"
			typeErrs = append(typeErrs, fmt.Sprintf("%s: %s", name, userError(t.TypeError)))
		}
		fmt.Fprintf(tw, "%s\t%v\t%.1f Hz\t%s\t%.1fs of %.1fs\t%d\t%d\t%d\t%d\t%s\t%s\n", name, t.Online, t.RateHz,
			units.FormatSize(int64(t.HeldBytes)), t.HeldSeconds, t.RetentionSeconds, t.RejectedOversize,
			t.LostToReaders, t.LostAtSource, t.EvictedSize, typ, t.Source)
	}
	tw.Flush()
	for _, e := range typeErrs {
		fmt.Fprintf(w, "type refused, recorded as raw bytes: %s\n", e)
	}
	if len(st.Rules) > 0 {
		tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "\nRULE\tWINDOW\tMESSAGES\tTRIGGERS\tSUPPRESSED\tSKIPPED\tLAG\tSTATE\n")
		for _, r := range st.Rules {
			state := "ok"
			if r.Stuck {
				state = fmt.Sprintf("STUCK in a callback for %s", time.Duration(r.CallNs).Round(time.Millisecond))
			}
			if r.Disabled {
				state = "DISABLED: " + userError(r.Why)
			}
			if r.ReloadError != "" {
				state += " (last reload failed: " + userError(r.ReloadError) + ")"
			}
			win := fmt.Sprintf("pre %s (%s) post %s (%s)", units.FormatDuration(time.Duration(r.PreS*1e9)), r.PreFrom,
				units.FormatDuration(time.Duration(r.PostS*1e9)), r.PostFrom)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Name, win, r.Messages, r.TriggersFired, r.TriggersSuppressed,
				r.Skipped, time.Duration(r.LagNs).Round(time.Millisecond), state)
		}
		tw.Flush()
	}
	if len(st.Sources) > 0 {
		fmt.Fprintln(w)
		for _, s := range st.Sources {
			fmt.Fprintf(w, "source %s %s: %d messages, %s, %d lost, %d rejected, %d errors\n", s.Kind, s.Name, s.Messages,
				units.FormatSize(int64(s.Bytes)), s.Lost, s.Rejected, s.Errors)
			if !s.Receiving {
				fmt.Fprintf(w, "  NOT RECEIVING (%s): %s\n", s.Cause, userError(s.Why))
			}
		}
	}
	return exitOK
}

// rotatedFor spells the rotations by reason, " (min_free_disk 2, ...)", or
// "" when there were none.
func rotatedFor(m map[string]uint64) string {
	var parts []string
	for _, r := range []string{dump.ReasonMaxFiles, dump.ReasonMaxTotalBytes, dump.ReasonMinFreeDisk} {
		if m[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, m[r]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
