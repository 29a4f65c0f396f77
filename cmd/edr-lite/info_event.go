package main

import (
	"fmt"
	"io"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
)

// printEventOrder says which topics the dump wrote in event-time order, by
// which field, and what it could not place: "event order: imu by t (ns):
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
		fmt.Fprintf(w, "event order: %s%s: %d late (beyond the reorder bound, written in arrival order), %d without an event time\n",
			t.Name, by, t.Late, t.EventTimeMissing)
	}
}
