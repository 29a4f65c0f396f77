package main

import (
	"fmt"

	"github.com/edr-lite/edr-lite/internal/config"
)

func init() {
	register(&verb{name: "config", summary: "print the default configuration, or check a configuration file", run: runConfig})
}

func runConfig(e *env) int {
	c := newCommand(e, "config", "edr-lite config init | edr-lite config check FILE",
		`"config init" prints a fully commented default configuration to stdout.
"config check FILE" parses FILE strictly (unknown keys, bad sizes and durations
are errors naming the key and line) and exits 0 when it is valid, 1 when not.`,
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
		f, err := config.Load(args[1])
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(e.stdout, "%s: ok (%d topic overrides, %d shm, %d udp, %d raw sources, %d rules)\n", args[1],
			len(f.Topics), len(f.Sources.SHM), len(f.Sources.UDP), len(f.Sources.Raw), len(f.Rules))
		return exitOK
	}
	return c.usageErr("unknown config action %q (want init or check)", args[0])
}
