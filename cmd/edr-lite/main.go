// Command edr-lite is the event data recorder: it records every live topic
// into rolling in-memory rings, lets Lua trigger rules decide when to keep a
// window of history, writes that window to a dump file, and inspects,
// verifies, recovers, merges, exports and replays dumps.
//
// Usage:
//
//	edr-lite <verb> [flags] [args]
//
// Run "edr-lite help" for the list of verbs and "edr-lite <verb> --help" for
// the flags of one verb. Exit status: 0 success, 1 failure, 2 bad usage.
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "edr-lite: unknown verb %q\n\n%s", args[0], usage)
	return 2
}

const usage = `edr-lite — event data recorder for robots and vehicles

Usage:
  edr-lite <verb> [flags] [args]

Verbs are added as the packages they wrap land; see README.md.
`
