package main

import (
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "config", summary: "print the default configuration, or check a configuration file", run: runConfig})
}

func runConfig(e *env) int {
	c := newCommand(e, "config", "edr-lite config init | edr-lite config check FILE",
		`"config init" prints a fully commented default configuration to stdout; its
values are edr-lite's defaults (an unset key takes the value shown).
"config check FILE" runs exactly the checks "run" makes before it starts:
the file strictly (unknown keys with a "did you mean", values of the wrong
type, bad sizes and durations), then everything that can fail without
acquiring anything (built-in and file rules and their params, addresses,
interfaces and ports, each source's socket opened and closed again,
directories, the cache against the topics' rings, topics two sources would
both feed). It prints every problem as FILE:LINE: key: what, and exits 0
when there is none, 1 when there are. Warnings (FILE:LINE: key: warning:
what) name what passes but will not work as meant: a shared-memory
directory that does not exist or is not in memory, a port in use now, HTTP
without a token; "run" logs them too. On success it shows the window each
rule's dumps will use.`,
		"edr-lite config init > edr-lite.toml\nedr-lite config check edr-lite.toml", 1, 2)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	switch args[0] {
	case "init":
		if len(args) != 1 {
			return c.usageErr("init takes no arguments")
		}
		fmt.Fprint(e.stdout, config.Default())
		return exitOK
	case "check":
		if len(args) != 2 {
			return c.usageErr("check needs exactly one FILE")
		}
		f, err := daemon.Load(args[1])
		if f == nil {
			// the warnings of a file that has problems, beside them
			f, _, _ = config.LoadForCheck(args[1])
		}
		var warns config.Errors
		if f != nil {
			warns = config.Errors(daemon.Warnings(f)).Sorted()
		}
		for _, w := range warns {
			fmt.Fprintln(e.stderr, c.problemLine(w, "warning: "))
		}
		if f != nil {
			// run warns; a deployment's check refuses
			if ps := daemon.ExposedSecrets(args[1], f); len(ps) > 0 {
				var all config.Errors
				if errors.As(err, &all) {
					all = append(all, ps...)
				} else if err == nil {
					all = ps
				}
				if all != nil {
					err = all.Sorted()
				}
			}
		}
		if err != nil {
			return c.failConfig(args[1], err)
		}
		warned := ""
		switch len(warns) {
		case 0:
		case 1:
			warned = ", 1 warning"
		default:
			warned = fmt.Sprintf(", %d warnings", len(warns))
		}
		fmt.Fprintf(e.stdout, "%s: ok (%d topic overrides, %d shm, %d udp, %d raw, %d can sources, %d rules)%s\n", args[1],
			len(f.Topics), len(f.Sources.SHM), len(f.Sources.UDP), len(f.Sources.Raw), len(f.Sources.CAN), len(f.Rules), warned)
		fmt.Fprintf(e.stdout, "recorder windows: pre %s, post %s\n", units.FormatDuration(f.Recorder.Pre.D()), units.FormatDuration(f.Recorder.Post.D()))
		ws, err := daemon.RuleWindows(f)
		if err != nil {
			return c.fail(err)
		}
		for _, w := range ws {
			fmt.Fprintf(e.stdout, "rule %s: pre %s (%s), post %s (%s)\n", w.Rule, units.FormatDuration(w.Pre), w.PreFrom,
				units.FormatDuration(w.Post), w.PostFrom)
		}
		return exitOK
	}
	return c.usageErr("unknown config action %q (want init or check)", args[0])
}
