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
// the flags and an example of one verb. Exit status: 0 success, 1 failure,
// 2 bad usage.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
