package main

import (
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/filter"
)

// selectFlags are the selection flags every reading verb declares, with
// one spelling and one parser (internal/filter): --topics, --exclude,
// --from, --to.
type selectFlags struct {
	topics, exclude, from, to *string
}

// selectHelp is the paragraph the help of a reading verb gives the
// selection flags.
const selectHelp = `Selection (the same on every reading verb): --topics and --exclude take
comma-separated globs (path.Match syntax) over "name#channel" and the name
alone; --from and --to take nanoseconds since the epoch, RFC 3339
(2026-12-02T10:15:00.5Z) or an offset from the start of the input ("2.5s"),
both ends included. A selection that matches nothing is an error naming what
the input holds.`

// declareSelectFlags declares the selection flags on c.
func declareSelectFlags(c *command) *selectFlags {
	return &selectFlags{
		topics:  c.fs.String("topics", "", "comma-separated topic `GLOBS` to keep; empty = all"),
		exclude: c.fs.String("exclude", "", "comma-separated topic `GLOBS` to leave out"),
		from:    c.fs.String("from", "", "first message `TIME` to keep (ns, RFC 3339 or offset from the start)"),
		to:      c.fs.String("to", "", "last message `TIME` to keep (same forms)"),
	}
}

// parse parses the flags' values; an error is bad usage.
func (f *selectFlags) parse() (filter.Selection, error) {
	to := ""
	if f.to != nil {
		to = *f.to
	}
	return filter.Parse(*f.topics, *f.exclude, *f.from, to)
}

// selectIn resolves sel for the dumps described by infos (their earliest
// start is the origin of offsets) and checks, before reading, that it can
// match something. A bad window (--from after --to) is usage; nothing to
// match is a failure.
func selectIn(sel filter.Selection, infos ...*dumpfile.Info) (held filter.Held, fromNs, toNs int64, usage, err error) {
	held = dumpfile.HeldBy(infos...)
	fromNs, toNs, usage = sel.Window(held.StartNs)
	if usage != nil {
		return held, 0, 0, usage, nil
	}
	return held, fromNs, toNs, nil, sel.Check(held, fromNs, toNs)
}
