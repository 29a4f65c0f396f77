package main

import (
	"fmt"
	"slices"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// Times cat can show (--time).
var catTimes = []string{"capture", "producer", "event"}

// catTime picks the time cat shows for each message: the capture time, the
// producer's (capture when unknown) or the event time a topic's field
// holds, as the dump recorded the field (dumpinfo.TopicAccount.EventTime:
// a recorder with event_time writes it), capture time where a topic has
// none or a message does not hold it.
type catTime struct {
	mode   string
	fields map[string][2]string // topic → path, unit
	cache  map[*ingest.Type]*schema.EventTime
}

// newCatTime reads the event-time fields of the dump at path (for "event").
func newCatTime(mode, path string, stdin bool) (*catTime, error) {
	if !slices.Contains(catTimes, mode) {
		return nil, fmt.Errorf("--time %q: want %s", mode, orList(catTimes))
	}
	c := &catTime{mode: mode, fields: map[string][2]string{}, cache: map[*ingest.Type]*schema.EventTime{}}
	if mode != "event" {
		return c, nil
	}
	if stdin {
		return nil, fmt.Errorf("--time event: needs a file (the event-time fields are in the dump's information, at its end)")
	}
	in, err := dumpfile.ReadInfo(path)
	if err != nil {
		return nil, err
	}
	for _, t := range in.Topics {
		if t.EventTime != "" {
			c.fields[t.Name] = [2]string{t.EventTime, t.EventTimeUnit}
		}
	}
	return c, nil
}

// msg returns m with TimeNs the time to show (m itself for capture time).
func (c *catTime) msg(m *dumpfile.Msg) *dumpfile.Msg {
	ns := m.TimeNs
	switch c.mode {
	case "producer":
		if m.GenNs != 0 {
			ns = m.GenNs
		}
	case "event":
		f, ok := c.fields[m.Topic]
		if !ok || m.Type == nil {
			break
		}
		et, seen := c.cache[m.Type]
		if !seen {
			et, _ = schema.NewEventTime(*m.Type, f[0], f[1]) // nil: capture time
			c.cache[m.Type] = et
		}
		if et != nil {
			if v, ok := et.Ns(m.Data); ok {
				ns = v
			}
		}
	}
	if ns == m.TimeNs {
		return m
	}
	cp := *m
	cp.TimeNs = ns
	return &cp
}
