package step

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// verdict is the report's last line.
func (r *Result) verdict() string {
	if r.OK() {
		return fmt.Sprintf("OK: %d ticks, every compared output matches the recording", r.Ticks)
	}
	bad := 0
	for _, e := range r.Errors {
		if e.Recorded {
			bad++
		}
	}
	s := fmt.Sprintf("FAIL: %d mismatches between the outputs and the recording", len(r.Mismatches)+r.MismatchesNotListed)
	if bad > 0 {
		s += fmt.Sprintf(", %d steps failed where the recording has an output", bad)
	}
	return s
}

// String is the report, laid out as "edr-lite replay --expect" lays out
// the closed loop's: a line per loop with its counts, the notes, every
// mismatch and error, and the verdict.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step replay (%s): %d ticks in %v\n", r.Timing, r.Ticks, r.Elapsed)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  loop\tmode\tcheck\tinput\toutput\tticks\trecorded\tgot\tmatched\tdiffering\tmissing\textra\tstep errors")
	for _, l := range r.Loops {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", l.Name, l.Mode, l.Check, l.Input, l.Output,
			l.Ticks, l.Recorded, l.Got, l.Matched, l.Differing, l.Missing, l.Extra, l.StepErrors)
	}
	tw.Flush()
	if r.Late.Samples > 0 {
		fmt.Fprintf(&b, "late after due: p50 %v, p99 %v, max %v over %d ticks\n", r.Late.P50, r.Late.P99, r.Late.Max, r.Late.Samples)
	}
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	if n := len(r.Mismatches) + r.MismatchesNotListed; n > 0 {
		fmt.Fprintf(&b, "mismatches (%d):\n", n)
		for _, m := range r.Mismatches {
			b.WriteString("  " + m.String() + "\n")
		}
		if r.MismatchesNotListed > 0 {
			fmt.Fprintf(&b, "  ... %d more not listed\n", r.MismatchesNotListed)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "step errors (%d):\n", len(r.Errors))
		for _, e := range r.Errors {
			b.WriteString("  " + e.String() + "\n")
		}
	}
	b.WriteString(r.verdict() + "\n")
	return b.String()
}
