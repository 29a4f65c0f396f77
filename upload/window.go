package upload

import (
	"fmt"
	"strings"
	"time"
)

// Window is when uploads may run: spans of the day in local time. The zero
// Window is always open.
type Window struct {
	spans []span // minutes since midnight; from > to wraps past midnight
	src   string
}

type span struct{ from, to int }

// ParseWindow parses "HH:MM-HH:MM[,HH:MM-HH:MM...]" (local time; a span
// whose end is before its start runs past midnight, "22:00-06:00"; 24:00
// ends a day, and as a start it is the next day's 00:00). "" is always
// open. A span from a time to itself is refused, midnight to midnight
// ("24:00-00:00", "24:00-24:00") too (say "" for always).
func ParseWindow(s string) (Window, error) {
	w := Window{src: s}
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return w, fmt.Errorf("window %q: want HH:MM-HH:MM, got %q", s, part)
		}
		from, err1 := clockMinutes(a)
		to, err2 := clockMinutes(b)
		if err1 != nil || err2 != nil {
			return w, fmt.Errorf("window %q: want HH:MM-HH:MM (00:00 to 24:00), got %q", s, part)
		}
		if from == to || from%(24*60) == to {
			// from 24:00 (the next day's 00:00) to 00:00 is empty too
			return w, fmt.Errorf("window %q: %q is empty (leave window empty to upload at any time)", s, part)
		}
		w.spans = append(w.spans, span{from % (24 * 60), to}) // a span starting at 24:00 starts at 00:00
	}
	return w, nil
}

func clockMinutes(s string) (int, error) {
	var h, m int
	if n, err := fmt.Sscanf(strings.TrimSpace(s), "%d:%d", &h, &m); err != nil || n != 2 {
		return 0, fmt.Errorf("bad time %q", s)
	}
	if h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return h*60 + m, nil
}

// Always reports whether the window is always open.
func (w Window) Always() bool { return len(w.spans) == 0 }

// String returns the window as written.
func (w Window) String() string { return w.src }

// Open reports whether t falls in the window.
func (w Window) Open(t time.Time) bool {
	if w.Always() {
		return true
	}
	m := t.Hour()*60 + t.Minute()
	for _, s := range w.spans {
		if s.from < s.to && m >= s.from && m < s.to {
			return true
		}
		if s.from > s.to && (m >= s.from || m < s.to) {
			return true
		}
	}
	return false
}

// NextOpen returns when the window next opens at or after t (t when it is
// open now). It steps through the next two days minute by minute at most.
func (w Window) NextOpen(t time.Time) time.Time {
	if w.Open(t) {
		return t
	}
	c := t.Truncate(time.Minute)
	for i := 0; i < 2*24*60; i++ {
		c = c.Add(time.Minute)
		if w.Open(c) {
			return c
		}
	}
	return t // unreachable for a valid window
}
