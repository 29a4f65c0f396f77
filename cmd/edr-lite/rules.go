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
	c := newCommand(e, "rules", "edr-lite rules test --rules FILE|DIR|builtin:NAME [--param [RULE.]K=V ...] [--mode full|input-only] [--tolerance D] DUMP...\nedr-lite rules list",
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
                     not recorded. Exit 1 on any mismatch: the rules'
                     regression test in CI. Recorded triggers of other sources
                     (API, signals, rules not loaded) are listed, not checked.

--rules takes a .lua file, a directory (every *.lua in it) or builtin:NAME
for a shipped rule; repeat it for several. --param K=V sets a parameter of
every rule, --param RULE.K=V only of the rule from file RULE.lua (or
builtin:RULE). "rules list" prints the shipped rules.`,
		"edr-lite rules test --rules builtin:hard_brake dump.pack\nedr-lite rules test --rules builtin:hard_brake dump.mcap\nedr-lite rules test --rules rules/ --param hard_brake.decel=7.5 --mode input-only dumps/*.pack", 1, -1)
	var specs, params multiFlag
	c.fs.Var(&specs, "rules", "rule file, directory of rules, or builtin:NAME (repeatable)")
	c.fs.Var(&params, "param", "K=V for every rule or RULE.K=V for one (repeatable)")
	mode := c.fs.String("mode", "full", "full (compare with the recorded triggers) or input-only (print the fired triggers)")
	tol := c.fs.String("tolerance", "1ms", "full mode: how far a fired trigger's time may be from the recorded one")
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
	if len(dumps) == 0 {
		return c.usageErr("rules test needs at least one DUMP")
	}
	if len(specs) == 0 {
		return c.usageErr("--rules is required")
	}
	if *mode != "full" && *mode != "input-only" {
		return c.usageErr("--mode %q: want full or input-only", *mode)
	}
	tolerance, err := units.ParseDuration(*tol)
	if err != nil || tolerance < 0 {
		return c.usageErr("--tolerance %q: want a duration like 1ms", *tol)
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
	cmp := replay.CompareTriggers(res.Fired, res.Recorded, res.Rules, tolerance)
	cmp.WriteDiff(e.stdout, res.Fired, res.Recorded)
	if !cmp.OK() {
		fmt.Fprintf(e.stdout, "FAIL: %d recorded trigger(s) not fired, %d fired trigger(s) not recorded (%d matched; rules %s; %d messages)\n",
			len(cmp.Missing), len(cmp.Unexpected), len(cmp.Matched), strings.Join(res.Rules, ", "), res.Messages)
		return exitFail
	}
	fmt.Fprintf(e.stdout, "ok: %d trigger(s) match the recording (rules %s; %d messages)\n", len(cmp.Matched), strings.Join(res.Rules, ", "), res.Messages)
	return rc
}
