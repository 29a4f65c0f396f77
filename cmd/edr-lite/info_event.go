package main

import (
	"fmt"
	"io"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
)

// printEventOrder says which topics the dump wrote in event-time order and
// what it could not place: "event order: imu/raw: 3 late (beyond the
// reorder bound), 0 without an event time".
func printEventOrder(w io.Writer, topics []dumpfile.Topic) {
	for _, t := range topics {
		if t.Order != dumpinfo.OrderEvent {
			continue
		}
		fmt.Fprintf(w, "event order: %s: %d late (beyond the reorder bound, written in arrival order), %d without an event time\n",
			t.Name, t.Late, t.EventTimeMissing)
	}
}
