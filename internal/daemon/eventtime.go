package daemon

import (
	"log/slog"
	"net"
	"path"
	"sync"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/schema"
)

// eventTimes resolves which topics have an event time (event_time in a
// [[topic]], or in the [[source.udp]] / [[source.raw]] they came from) into
// schema.EventTime readers for dump.EventOrder. A reader is compiled once
// per rule and type (its content ID), not per dump; a path the topic's type
// does not hold is logged once, naming topic and cause, and the topic is
// written in capture order.
type eventTimes struct {
	topics  []eventRule // [[topic]] with event_time, in file order
	sources map[string]eventRule
	log     *slog.Logger

	mu    sync.Mutex
	cache map[eventKey]*dump.EventField // nil: the path does not compile
}

type eventRule struct {
	match      string // [[topic]] glob; "" for a source
	path, unit string
}

type eventKey struct {
	rule eventRule
	typ  ingest.ContentID
}

// newEventTimes returns nil when no table names an event time.
func newEventTimes(f *config.File) *eventTimes {
	e := &eventTimes{sources: map[string]eventRule{}, cache: map[eventKey]*dump.EventField{}, log: slog.Default()}
	for _, t := range f.Topics {
		if t.EventTime != "" {
			e.topics = append(e.topics, eventRule{match: t.Match, path: t.EventTime, unit: t.EventTimeUnit})
		}
	}
	// the Source a listener gives its topics (capture: "udp:ADDR", "raw:IFACE")
	for _, s := range f.Sources.UDP {
		if s.EventTime != "" {
			addr := s.Listen
			if s.Group != "" {
				if _, port, err := net.SplitHostPort(s.Listen); err == nil {
					addr = net.JoinHostPort(s.Group, port)
				}
			}
			e.sources["udp:"+addr] = eventRule{path: s.EventTime, unit: s.EventTimeUnit}
		}
	}
	for _, s := range f.Sources.Raw {
		if s.EventTime != "" {
			e.sources["raw:"+s.Interface] = eventRule{path: s.EventTime, unit: s.EventTimeUnit}
		}
	}
	if len(e.topics) == 0 && len(e.sources) == 0 {
		return nil
	}
	return e
}

// rule is the event-time rule of a topic: the first [[topic]] whose glob
// matches it, when it names an event time; else (an unset key keeps what
// the source says, as for every [[topic]] key) its source's.
func (e *eventTimes) rule(t *ingest.TopicInfo, f []string) (eventRule, bool) {
	for i, g := range f {
		if ok, _ := path.Match(g, t.Name); ok || t.Channel != "" && matchChannel(g, t) {
			for _, r := range e.topics {
				if r.match == f[i] {
					return r, true
				}
			}
			break
		}
	}
	r, ok := e.sources[t.Source]
	return r, ok
}

func matchChannel(g string, t *ingest.TopicInfo) bool {
	ok, _ := path.Match(g, t.Name+"#"+t.Channel)
	return ok
}

// order is the dump transform over e.
func (e *eventTimes) order(f *config.File) *dump.EventOrder {
	globs := make([]string, len(f.Topics))
	for i, t := range f.Topics {
		globs[i] = t.Match
	}
	r := f.Recorder
	return &dump.EventOrder{
		Window: r.EventTimeWindow.D(), MaxMessages: r.EventTimeMaxMessages, MaxBytes: int64(r.EventTimeMaxBytes),
		EventTime: func(t *ingest.TopicInfo) *dump.EventField {
			rule, ok := e.rule(t, globs)
			if !ok {
				return nil
			}
			return e.compile(t, rule)
		},
	}
}

func (e *eventTimes) compile(t *ingest.TopicInfo, r eventRule) *dump.EventField {
	k := eventKey{r, t.Type.ID()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.cache[k]; ok {
		return f
	}
	var f *dump.EventField
	et, err := schema.NewEventTime(t.Type, r.path, r.unit)
	if err != nil {
		e.log.Warn("event time not readable: the topic is written in capture order",
			"topic", t.Name, "channel", t.Channel, "event_time", r.path, "type", t.Type.String(), "err", err)
	} else {
		f = &dump.EventField{Path: r.path, Unit: r.unit, Ns: et.Ns}
		if f.Unit == "" { // a packed field's own unit: recorded, so a JSON transcoding reads it too
			if d, err := schema.NewDecoder(t.Type); err == nil {
				if l, ok := d.(*schema.Layout); ok {
					if a, err := l.Accessor(r.path); err == nil {
						f.Unit = a.Field().Unit
					}
				}
			}
		}
	}
	if len(e.cache) > 4096 {
		clear(e.cache)
	}
	e.cache[k] = f
	return f
}
