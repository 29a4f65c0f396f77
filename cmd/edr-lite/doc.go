// Command edr-lite is the event data recorder: it records every live topic
// into rolling in-memory rings, lets Lua trigger rules decide when to keep a
// window of history, writes that window to a dump file, and inspects,
// verifies, recovers, cuts, splits, merges, compresses, exports (JSON
// lines, MCAP, Parquet tables) and replays dumps, and uploads them to
// S3-compatible object storage.
//
// Usage:
//
//	edr-lite <verb> [flags] [args]
//
// Run "edr-lite help" for the list of verbs and "edr-lite <verb> --help" for
// the flags and an example of one verb, "edr-lite --version" for the build,
// "edr-lite completion bash|zsh|fish" for shell completion. Exit status: 0
// success, 1 failure, 2 bad usage. docs/cli.md gives the conventions.
//
// # Caveats
//
// The binary is thin: the recorder's wiring is internal/daemon, dump summaries
// dumpfile, configuration internal/config. Verbs that talk to a
// running recorder use its control socket (default /run/edr-lite.sock).
package main
