package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/replay"
	"github.com/edr-lite/edr-lite/scripts"
)

func init() {
	register(&verb{name: "rules", summary: "regression-test trigger rules against recorded dumps; list the shipped rules", run: runRules})
}

func runRules(e *env) int {
	c := newCommand(e, "rules", "edr-lite rules test --rules FILE|DIR|builtin:NAME [--param [RULE.]K=V ...] [--mode full|input-only|output-only] [--tolerance D] [--value-tolerance F] [--allow-empty] DUMP...\nedr-lite rules list",
		`"rules test" feeds every message of the dumps (pack or MCAP, in any mix), in
capture-time order, through the Lua rules in message time (the path the live
recorder uses), so the same dumps and rules fire the same triggers on every
run and machine. An MCAP dump gives the same triggers as the pack dump it
was exported from, and its recorded triggers come from its edr.* metadata.

  --mode input-only  print each trigger the rules fire, one JSON object per
                     line: rule, reason, time_ns, time, pre_ns, post_ns, tag,
                     severity, topics, params. Exit 0.
  --mode full        (default) also compare them with the triggers recorded in
                     the dumps (same rule and reason, time within --tolerance)
                     and print a diff: "-" recorded but not fired, "+" fired but
                     not recorded, "!" fired at the recorded time but with
                     another tag, severity, window (pre, post) or params, each
                     difference named. Numbers inside tags and params compare
                     as numbers (within --value-tolerance, relative, absolute
                     below 1), durations as durations. Exit 1 on any mismatch:
                     the rules' regression test in CI. Recorded triggers of
                     other sources (API, signals, rules not loaded) are listed,
                     not checked.
  --mode output-only print the triggers recorded in the dumps, in the form of
                     input-only (no rule runs; --rules is not needed): what the
                     recording says, for a downstream consumer or a diff.

--rules takes a .lua file, a directory (every *.lua in it) or builtin:NAME
for a shipped rule; repeat it for several. --param K=V sets a parameter of
every rule, --param RULE.K=V only of the rule from file RULE.lua (or
builtin:RULE). "rules list" prints the shipped rules.

A rule that received no message (none of its topics is in the dumps, or
they hold no message) makes the test fail, in full and input-only mode,
naming the topics it reads and those the dumps hold: zero triggers from a
rule that saw nothing prove nothing (a CI gate run on the wrong file).
--allow-empty accepts it, with a note.

What a rule's trigger carries is bounded as in the live recorder: a reason
of at most 256 bytes, a tag of 1024, at most 64 params of 1024; a longer one
is cut and ends with "…[truncated]".`,
		"edr-lite rules test --rules builtin:hard_brake dump.pack\nedr-lite rules test --rules builtin:hard_brake dump.mcap\nedr-lite rules test --rules rules/ --param hard_brake.decel=7.5 --mode input-only dumps/*.pack", 1, -1)
	var specs, params multiFlag
	c.fs.Var(&specs, "rules", "rule file, directory of rules, or builtin:NAME (repeatable)")
	c.fs.Var(&params, "param", "K=V for every rule or RULE.K=V for one (repeatable)")
	mode := c.fs.String("mode", "full", "full (compare with the recorded triggers), input-only (print the fired triggers) or output-only (print the recorded ones)")
	tol := c.fs.String("tolerance", "1ms", "full mode: how far a fired trigger's time may be from the recorded one")
	vtol := c.fs.Float64("value-tolerance", replay.DefaultValueTolerance, "full mode: how far numbers in tags and params may differ, times max(1, |value|)")
	allowEmpty := c.fs.Bool("allow-empty", false, "pass even when a rule received no message (its topics are not in the dumps)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	switch args[0] {
	case "list":
		for _, n := range scripts.ShippedNames() {
			fmt.Fprintln(e.stdout, replay.BuiltinPrefix+n)
		}
		return exitOK
	case "test":
	default:
		return c.usageErr("unknown rules action %q (want test or list)", args[0])
	}
	dumps := args[1:]
	c.warnSkippedIn(dumps)
	if len(dumps) == 0 {
		return c.usageErr("rules test needs at least one DUMP")
	}
	switch *mode {
	case "full", "input-only":
	case "output-only":
		return printRecordedTriggers(c, dumps)
	default:
		return c.usageErr("--mode %q: want full, input-only or output-only", *mode)
	}
	if len(specs) == 0 {
		return c.usageErr("--rules is required")
	}
	tolerance, err := units.ParseDuration(*tol)
	if err != nil || tolerance < 0 {
		return c.usageErr("--tolerance %q: want a duration like 1ms", *tol)
	}
	if !(*vtol >= 0) {
		return c.usageErr("--value-tolerance %v: want 0 or more", *vtol)
	}
	opts := replay.RulesOptions{Params: map[string]string{}, RuleParams: map[string]map[string]string{}}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return c.usageErr("--param %q: want K=V or RULE.K=V", p)
		}
		if rule, key, ok := strings.Cut(k, "."); ok && rule != "" && key != "" {
			if opts.RuleParams[rule] == nil {
				opts.RuleParams[rule] = map[string]string{}
			}
			opts.RuleParams[rule][key] = v
			continue
		}
		opts.Params[k] = v
	}
	res, err := replay.RunRules(dumps, specs, opts)
	if err != nil {
		if errors.Is(err, replay.ErrOptions) {
			return c.usageErr("%v", err)
		}
		return c.fail(err)
	}
	silent := res.Silent()
	// name the dumps: a CI log shows which file the rule saw nothing in
	on := dumps[0]
	if len(dumps) > 1 {
		on = fmt.Sprintf("%s and %d more", dumps[0], len(dumps)-1)
	}
	for _, why := range silent {
		if *allowEmpty {
			fmt.Fprintf(e.stderr, "edr-lite rules: %s: note: %s (--allow-empty)\n", on, why)
		} else {
			fmt.Fprintf(e.stderr, "edr-lite rules: %s: %s: the test proves nothing about it (--allow-empty if that is expected)\n", on, why)
		}
	}
	if len(silent) > 0 && !*allowEmpty {
		return exitFail
	}
	if *mode == "input-only" {
		for _, t := range res.Fired {
			b, err := json.Marshal(t)
			if err != nil {
				return c.fail(err)
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
		}
	}
	rc := exitOK
	if d := res.Disabled(); len(d) > 0 {
		for _, why := range d {
			fmt.Fprintf(e.stderr, "edr-lite rules: rule disabled during the replay: %s\n", why)
		}
		rc = exitFail
	}
	if *mode == "input-only" {
		return rc
	}
	cmp := replay.Compare(res.Fired, res.Recorded, res.Rules, replay.CompareOptions{Time: tolerance, Value: *vtol})
	cmp.WriteDiff(e.stdout, res.Fired, res.Recorded)
	if !cmp.OK() {
		fmt.Fprintf(e.stdout, "FAIL: %d recorded trigger(s) not fired, %d fired trigger(s) not recorded, %d fired with other fields (%d matched; rules %s; %d messages)\n",
			len(cmp.Missing), len(cmp.Unexpected), len(cmp.Changed), len(cmp.Matched), strings.Join(res.Rules, ", "), res.Messages)
		return exitFail
	}
	fmt.Fprintf(e.stdout, "ok: %d trigger(s) match the recording (rules %s; %d messages)\n", len(cmp.Matched), strings.Join(res.Rules, ", "), res.Messages)
	return rc
}

// printRecordedTriggers is "rules test --mode output-only": the triggers
// recorded in the dumps as JSON lines, the form input-only prints.
func printRecordedTriggers(c *command, dumps []string) int {
	ts, err := replay.RecordedTriggers(dumps)
	if err != nil {
		return c.fail(err)
	}
	for _, t := range ts {
		b, err := json.Marshal(t)
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.e.stdout, "%s\n", b)
	}
	return exitOK
}
