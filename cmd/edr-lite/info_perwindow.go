package main

import (
	"fmt"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"io"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
)

// A dump that holds several separate windows (a merge of dumps, a recorder
// dump that several distant triggers joined) has nothing recorded between
// them: a rate over its whole span, or a held span from its first message
// to its last, averages the gaps in. info gives such a dump per-window
// figures instead, read from its messages.

// infoWindow is one separate window of a dump: the union of the effective
// windows of the triggers that overlap (dumpinfo.Trigger.Window), what
// each topic holds in it.
type infoWindow struct {
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	// Triggers are the indexes (from 0) of the triggers[] whose windows
	// make it.
	Triggers []int          `json:"triggers"`
	Messages uint64         `json:"messages"`
	Topics   []windowTopics `json:"topics"`
}

// windowTopics is one topic's figures in one window: its messages in
// [FromNs, ToNs], the first and last of them, and its rate between them.
type windowTopics struct {
	Name     string  `json:"name"`
	Messages uint64  `json:"messages"`
	FirstNs  int64   `json:"first_ns,omitempty"`
	LastNs   int64   `json:"last_ns,omitempty"`
	RateHz   float64 `json:"rate_hz,omitempty"`
}

// infoJSONOut is info --json's object: the summary, and the windows when
// the dump holds several.
type infoJSONOut struct {
	*dumpfile.Info
	Windows    []infoWindow         `json:"windows,omitempty"`
	Signature  *signatureJSON       `json:"signature,omitempty"`
	Provenance *dumpinfo.Provenance `json:"provenance,omitempty"`
}

// dumpWindows returns the separate windows of a dump whose triggers all
// record a window and make at least two disjoint ones (nil otherwise: the
// dump's own figures say it all), clipped to a cut's window.
func dumpWindows(in *dumpfile.Info) []infoWindow {
	if len(in.Triggers) < 2 {
		return nil
	}
	type span struct {
		from, to int64
		i        int
	}
	var spans []span
	for i := range in.Triggers {
		from, to, _, _, ok := in.Triggers[i].Window()
		if !ok {
			return nil
		}
		if c := in.Cut; c != nil {
			from, to = max(from, c.FromNs), min(to, c.ToNs)
		}
		if to >= from {
			spans = append(spans, span{from, to, i})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].from < spans[b].from })
	var out []infoWindow
	for _, s := range spans {
		if n := len(out); n > 0 && s.from <= out[n-1].ToNs {
			out[n-1].ToNs = max(out[n-1].ToNs, s.to)
			out[n-1].Triggers = append(out[n-1].Triggers, s.i)
			continue
		}
		out = append(out, infoWindow{FromNs: s.from, ToNs: s.to, Triggers: []int{s.i}})
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// fillWindows counts, from the dump's messages, what each topic holds in
// each window. Messages outside every window (a latched message kept from
// before one) are left out of the windows' figures.
func fillWindows(path string, in *dumpfile.Info, ws []infoWindow) error {
	idx := map[string]int{}
	for i, t := range in.Topics {
		idx[t.Name] = i
	}
	for k := range ws {
		ws[k].Topics = make([]windowTopics, len(in.Topics))
		for i, t := range in.Topics {
			ws[k].Topics[i].Name = t.Name
		}
	}
	err := dumpfile.Walk(path, func(m *dumpfile.Msg) error {
		k := sort.Search(len(ws), func(k int) bool { return ws[k].ToNs >= m.TimeNs })
		if k == len(ws) || m.TimeNs < ws[k].FromNs {
			return nil
		}
		i, ok := idx[m.Topic]
		if !ok {
			return nil
		}
		t := &ws[k].Topics[i]
		if t.Messages == 0 || m.TimeNs < t.FirstNs {
			t.FirstNs = m.TimeNs
		}
		t.LastNs = max(t.LastNs, m.TimeNs)
		t.Messages++
		ws[k].Messages++
		return nil
	})
	for k := range ws {
		for i := range ws[k].Topics {
			if t := &ws[k].Topics[i]; t.Messages > 1 && t.LastNs > t.FirstNs {
				t.RateHz = float64(t.Messages-1) / (float64(t.LastNs-t.FirstNs) / 1e9)
			}
		}
	}
	return err
}

// windowsRate is a topic's rate within the windows (messages over the time
// they span in each window, the gaps left out), "-" when not known.
func windowsRate(ws []infoWindow, i int) string {
	var n uint64
	var ns int64
	for _, w := range ws {
		if t := w.Topics[i]; t.Messages > 1 && t.LastNs > t.FirstNs {
			n += t.Messages - 1
			ns += t.LastNs - t.FirstNs
		}
	}
	if ns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f Hz", float64(n)/(float64(ns)/1e9))
}

// windowsHeld is the time a topic's messages span within the windows
// against the windows' length: "14.985s of 15s in 3 windows", with the
// windows it has nothing in and its messages outside every window (a
// latched message kept from before a window); total is its messages.
func windowsHeld(ws []infoWindow, i int, total uint64) string {
	var held, asked int64
	var with int
	var in uint64
	for _, w := range ws {
		asked += w.ToNs - w.FromNs
		if t := w.Topics[i]; t.Messages > 0 {
			held += t.LastNs - t.FirstNs
			in += t.Messages
			with++
		}
	}
	s := fmt.Sprintf("%s of %s in %d windows", fmtDur(held), fmtDur(asked), len(ws))
	var notes []string
	if with < len(ws) {
		notes = append(notes, fmt.Sprintf("none in %d", len(ws)-with))
	}
	if total > in {
		notes = append(notes, fmt.Sprintf("%d outside them", total-in))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// printWindows prints the windows and the gaps between them.
func printWindows(w io.Writer, in *dumpfile.Info, ws []infoWindow) {
	var inside int64
	for _, x := range ws {
		inside += x.ToNs - x.FromNs
	}
	span := ws[len(ws)-1].ToNs - ws[0].FromNs
	fmt.Fprintf(w, "windows:    %d separate windows, %s in all; %s between them, %s, where nothing was recorded\n",
		len(ws), fmtDur(inside), plural(len(ws)-1, "%d gap", "%d gaps"), fmtDur(span-inside))
	for k, x := range ws {
		if k > 0 {
			fmt.Fprintf(w, "    gap   %s\n", fmtDur(x.FromNs-ws[k-1].ToNs))
		}
		var reasons []string
		for _, i := range x.Triggers {
			reasons = append(reasons, in.Triggers[i].Reason)
		}
		fmt.Fprintf(w, "  %d %s to %s (%s), %d messages, trigger %s\n", k+1, fmtTime(x.FromNs), fmtTime(x.ToNs),
			fmtDur(x.ToNs-x.FromNs), x.Messages, strings.Join(reasons, ", "))
	}
}
