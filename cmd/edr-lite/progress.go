//go:build !ecu

package main

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar on a terminal (stderr) in a unit people read
// (messages, bytes, seconds of driving). It ends at 100% on a line of its
// own, so what the verb prints next starts on a fresh line. Off a
// terminal it draws nothing. The ECU build draws it without
// schollz/progressbar (progress_ecu.go).
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress starts a bar of total units ("messages", "bytes" or
// "seconds") described by desc, when e.stderr is a terminal; a negative
// total draws a count without a bar (the total is not known).
func newProgress(e *env, total int64, desc, unit string) *progress {
	if !isTerminal(e.stderr) {
		return &progress{}
	}
	opts := []progressbar.Option{progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100 * time.Millisecond), progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) })}
	switch unit {
	case "bytes":
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true))
	default: // the unit in the description: "merging (messages)"
		opts[1] = progressbar.OptionSetDescription(desc + " (" + unit + ")")
		opts = append(opts, progressbar.OptionShowCount())
	}
	if total >= 0 {
		total = max(total, 1)
	} else {
		total = -1
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

// set moves the bar to n units done.
func (p *progress) set(n int64) {
	if p.bar != nil {
		if m := p.bar.GetMax64(); m >= 0 {
			n = min(n, m)
		}
		p.bar.Set64(n)
	}
}

// finish draws the bar at 100% and ends its line.
func (p *progress) finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Finish()
	}
}
