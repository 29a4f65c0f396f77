package main

import (
	"fmt"

	"github.com/edr-lite/edr-lite/dumpfile"
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
the input holds; a glob that matches no topic beside others that do is a
warning naming it (a typo would otherwise select less, silently).`

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
// A glob that matches no topic, beside others that do, is a warning
// naming it and the topics there are.
func (c *command) selectIn(sel filter.Selection, infos ...*dumpfile.Info) (held filter.Held, fromNs, toNs int64, usage, err error) {
	held = heldBy(infos...)
	fromNs, toNs, usage = sel.Window(held.StartNs)
	if usage != nil {
		return held, 0, 0, usage, nil
	}
	if err = sel.Check(held, fromNs, toNs); err == nil {
		c.warnUnmatched(sel, held)
	}
	return held, fromNs, toNs, nil, err
}

// warnUnmatched warns of each --topics or --exclude glob that matches no
// topic of held (sel.Unmatched).
func (c *command) warnUnmatched(sel filter.Selection, held filter.Held) {
	c.warnNotes(sel.Unmatched(held))
}

// heldBy describes what the dumps of infos hold, for the errors of a
// selection (internal/filter) that matches nothing: their topics, the
// earliest start and latest end, and "a.pack" or "3 dumps".
func heldBy(infos ...*dumpfile.Info) filter.Held {
	var h filter.Held
	seen := map[string]bool{}
	known := false
	for _, in := range infos {
		for _, t := range in.Topics {
			if !seen[t.Name] {
				seen[t.Name] = true
				h.Topics = append(h.Topics, t.Name)
			}
		}
		if in.StartNs != 0 || in.EndNs != 0 {
			if !known || in.StartNs < h.StartNs {
				h.StartNs = in.StartNs
			}
			if !known || in.EndNs > h.EndNs {
				h.EndNs = in.EndNs
			}
			known = true
		}
		h.Messages += in.Messages
	}
	switch len(infos) {
	case 1:
		h.What = infos[0].Path
	default:
		h.What = fmt.Sprintf("the %d dumps", len(infos))
	}
	return h
}
