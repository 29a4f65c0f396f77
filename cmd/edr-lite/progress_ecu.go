//go:build ecu

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/internal/units"
)

// The ECU build's progress bar: schollz/progressbar, which the full build
// draws with (progress.go), links net/http for a feature edr-lite does
// not use, and the ECU build links no net/http (docs/ecu.md). This draws
// the same line, plainer: "merging (messages)  42% |#####      | (93/220)",
// or "DESC (N)" without a total, at most every 100 ms, and at the end the
// full bar on a line of its own. Off a terminal it draws nothing.
type progress struct {
	w     io.Writer // nil: draws nothing
	desc  string
	bytes bool  // counts bytes (drawn as sizes)
	total int64 // -1: unknown
	n     int64
	last  time.Time
}

// progressWidth is the bar's width in characters.
const progressWidth = 30

// newProgress starts a bar of total units ("messages", "bytes" or
// "seconds") described by desc, when e.stderr is a terminal; a negative
// total draws a count without a bar (the total is not known).
func newProgress(e *env, total int64, desc, unit string) *progress {
	if !isTerminal(e.stderr) {
		return &progress{}
	}
	p := &progress{w: e.stderr, desc: desc, bytes: unit == "bytes", total: -1}
	if !p.bytes {
		p.desc += " (" + unit + ")"
	}
	if total >= 0 {
		p.total = max(total, 1)
	}
	p.draw()
	return p
}

// set moves the bar to n units done; at the total it finishes.
func (p *progress) set(n int64) {
	if p.w == nil {
		return
	}
	if p.total >= 0 && n >= p.total {
		p.finish()
		return
	}
	p.n = n
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.draw()
	}
}

// finish draws the bar at 100% and ends its line.
func (p *progress) finish() {
	if p.w == nil {
		return
	}
	if p.total >= 0 {
		p.n = p.total
	}
	p.draw()
	fmt.Fprintln(p.w)
	p.w = nil
}

func (p *progress) draw() {
	count := func(n int64) string {
		if p.bytes {
			return units.FormatSize(n)
		}
		return strconv.FormatInt(n, 10)
	}
	if p.total < 0 {
		fmt.Fprintf(p.w, "\r%s (%s)\x1b[K", p.desc, count(p.n))
		return
	}
	fill := int(p.n * progressWidth / p.total)
	fmt.Fprintf(p.w, "\r%s %3d%% |%s%s| (%s/%s)\x1b[K", p.desc, p.n*100/p.total, strings.Repeat("#", fill),
		strings.Repeat(" ", progressWidth-fill), count(p.n), count(p.total))
}
