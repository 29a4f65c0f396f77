package main

import (
	"fmt"
	"io"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
)

// printEventOrder says which topics the dump wrote in event-time order, by
// which field, the span of the event times it holds and what it could not
// place: "event order: imu by t (ns): events 2026-…Z to 2026-…Z (5s),
// 3 late (beyond the reorder bound, ...), 0 without an event time".
func printEventOrder(w io.Writer, topics []dumpfile.Topic) {
	for _, t := range topics {
		if t.Order != dumpinfo.OrderEvent {
			continue
		}
		by := ""
		if t.EventTime != "" {
			by = " by " + t.EventTime
			if t.EventTimeUnit != "" {
				by += " (" + t.EventTimeUnit + ")"
			}
		}
		span := ""
		if t.EventLastNs != 0 {
			span = fmt.Sprintf(" events %s to %s (%s),", fmtTime(t.EventFirstNs), fmtTime(t.EventLastNs), fmtDur(t.EventLastNs-t.EventFirstNs))
		}
		fmt.Fprintf(w, "event order: %s%s:%s %d late (beyond the reorder bound, written in arrival order), %d without an event time\n",
			t.Name, by, span, t.Late, t.EventTimeMissing)
	}
}
