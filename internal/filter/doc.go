// Package filter is the one parser of the selection flags every reading
// verb takes: --topics and --exclude (comma-separated topic globs) and
// --from and --to (a time: nanoseconds since the epoch, RFC 3339, or an
// offset from the input's start such as "2.5s"). cat, export, filter,
// split, merge and replay parse them here, so one spelling means one thing
// everywhere, and a selection that matches nothing is an error naming what
// the input holds instead of an empty result.
//
// A topic glob uses path.Match syntax and is tried against the topic as
// the offline verbs spell it ("name", or "name#channel") and against the
// name alone, so "vehicle/*" selects "vehicle/speed#left". A topic is
// selected when it matches an --topics glob (or there is none) and no
// --exclude glob. A time window is inclusive at both ends.
//
// It is not for: reading files (dumpfile does; Held describes
// what an input holds), nor flags themselves (cmd/edr-lite declares them
// and hands the strings here).
//
// # Caveats
//
// Selection values are immutable after Parse and safe for concurrent use.
// Match allocates nothing. An offset (--from 2s) only means something once
// Window is given the input's start; Selection.NeedsStart says whether
// that start must be known before reading (it cannot be for a pipe).
package filter
