package dump

import (
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/kway"
	"github.com/edr-lite/edr-lite/pack"
)

// EventTimeFunc returns the event time of one message of a topic (the time
// its data says it describes, in UNIX ns; schema.EventTime.Ns); false when
// the message does not hold it.
type EventTimeFunc func(msg []byte) (int64, bool)

// EventField is a topic's event time: the field of its schema that holds
// it (a field path and its unit, recorded in the dump's accounting so
// offline verbs read the same time: dumpinfo.TopicAccount.EventTime) and
// its reader.
type EventField struct {
	Path, Unit string
	Ns         EventTimeFunc
}

// EventOrder is the Transform that writes the topics that have an event
// time (a field of their schema, configured per topic: event_time) in
// event-time order through a bounded reorder stage; other topics pass
// through in capture order, as they come.
//
// A message is held until the capture time of the newest message of the
// dump has passed its event time by Window, or until the stage holds
// MaxMessages messages or MaxBytes bytes of payload (then the earliest
// goes out): memory is bounded by MaxBytes plus MaxMessages times a small
// record (about 80 bytes). A message whose event time is earlier than one
// of its topic already written (it arrived more than Window late, or the
// bounds pushed a later one out) cannot be put in order: it is written at
// once, in arrival order, and counted in its topic's
// dumpinfo.TopicAccount.Late, so per topic the file holds exactly Late
// messages whose event time is below that of a message before them. A
// message whose event time cannot be read (too short, the field absent) is
// also written at once and counted in EventTimeMissing.
type EventOrder struct {
	// EventTime returns the event time of a topic's type span, or nil
	// when the topic has none. It is called once per dump and TopicInfo
	// (one pointer per topic and type span).
	EventTime func(topic *ingest.TopicInfo) *EventField
	// Window is how far behind capture time a message's event time may be
	// and still be put in order (defaults.EventOrderWindow when 0).
	Window time.Duration
	// MaxMessages and MaxBytes bound what one dump's stage holds
	// (defaults.EventOrderMaxMessages, defaults.EventOrderMaxBytes when
	// 0).
	MaxMessages int
	MaxBytes    int64
}

// NewStage starts one dump's reorder stage.
func (o *EventOrder) NewStage(next MessageWriter) Stage {
	s := &eventStage{next: next, o: *o, funcs: map[*ingest.TopicInfo]*eventTopic{}, topics: map[string]*eventTopic{},
		h: kway.New(func(a, b eventItem) bool {
			if a.key != b.key {
				return a.key < b.key
			}
			return a.order < b.order
		}, 64)}
	if s.o.Window <= 0 {
		s.o.Window = defaults.EventOrderWindow
	}
	if s.o.MaxMessages <= 0 {
		s.o.MaxMessages = defaults.EventOrderMaxMessages
	}
	if s.o.MaxBytes <= 0 {
		s.o.MaxBytes = defaults.EventOrderMaxBytes
	}
	return s
}

// eventTopic is one topic's state in a stage (shared by its type spans;
// fn is per span).
type eventTopic struct {
	label   string
	fn      EventTimeFunc
	field   *EventField
	last    int64 // event time of the last message written
	written bool
	late    uint64
	missing uint64
	// first and lastEv are the least and greatest event time of the
	// messages with one (seen tells whether there was any).
	firstEv, lastEv int64
	seen            bool
	st              *eventTopic // the topic's shared state (itself for the first span)
}

type eventItem struct {
	topic    *ingest.TopicInfo
	st       *eventTopic
	key      int64
	gen, cap int64
	order    uint64
	data     []byte
}

// eventStage is one dump's EventOrder. Dumper goroutine only.
type eventStage struct {
	next   MessageWriter
	o      EventOrder
	funcs  map[*ingest.TopicInfo]*eventTopic
	topics map[string]*eventTopic
	h      *kway.Heap[eventItem]
	bytes  int64
	n      uint64
	free   [][]byte
}

func (s *eventStage) topic(t *ingest.TopicInfo) *eventTopic {
	if e := s.funcs[t]; e != nil {
		return e
	}
	label := pack.Topic(t.Name, t.Channel)
	st := s.topics[label]
	if st == nil {
		st = &eventTopic{label: label}
		st.st = st
		s.topics[label] = st
	}
	e := &eventTopic{label: label, st: st}
	if s.o.EventTime != nil {
		if e.field = s.o.EventTime(t); e.field != nil {
			e.fn = e.field.Ns
		}
	}
	s.funcs[t] = e
	return e
}

func (s *eventStage) WriteMessage(t *ingest.TopicInfo, gen, capNs int64, data []byte) error {
	e := s.topic(t)
	if e.fn == nil {
		if err := s.release(capNs); err != nil {
			return err
		}
		return s.next.WriteMessage(t, gen, capNs, data)
	}
	st := e.st
	key, ok := e.fn(data)
	if ok {
		if !st.seen || key < st.firstEv {
			st.firstEv = key
		}
		if !st.seen || key > st.lastEv {
			st.lastEv = key
		}
		st.seen = true
	}
	switch {
	case !ok:
		st.missing++
	case st.written && key < st.last:
		st.late++
	default:
		var buf []byte
		if n := len(s.free); n > 0 {
			buf, s.free = s.free[n-1][:0], s.free[:n-1]
		}
		s.n++
		s.h.Push(eventItem{topic: t, st: st, key: key, gen: gen, cap: capNs, order: s.n, data: append(buf, data...)})
		s.bytes += int64(len(data))
		return s.release(capNs)
	}
	if err := s.release(capNs); err != nil {
		return err
	}
	return s.next.WriteMessage(t, gen, capNs, data)
}

// release writes every held message that can no longer be overtaken
// within the window, and the earliest ones while the bounds are exceeded.
func (s *eventStage) release(capNs int64) error {
	edge := capNs - int64(s.o.Window)
	for s.h.Len() > 0 && (s.h.Top().key <= edge || s.h.Len() > s.o.MaxMessages || s.bytes > s.o.MaxBytes) {
		if err := s.emit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *eventStage) emit() error {
	it := s.h.Pop()
	s.bytes -= int64(len(it.data))
	it.st.last, it.st.written = it.key, true
	err := s.next.WriteMessage(it.topic, it.gen, it.cap, it.data)
	s.free = append(s.free, it.data)
	return err
}

// Flush writes everything still held.
func (s *eventStage) Flush() error {
	for s.h.Len() > 0 {
		if err := s.emit(); err != nil {
			return err
		}
	}
	return nil
}

// Account sets Late, EventTimeMissing and the event-time span of the
// topics that have an event time, and marks them ordered by it.
func (s *eventStage) Account(info *dumpinfo.Info) {
	for i := range info.Topics {
		a := &info.Topics[i]
		st := s.topics[a.Topic]
		if st == nil {
			continue
		}
		var field *EventField
		for _, e := range s.funcs {
			if e.st == st && e.fn != nil {
				field = e.field
			}
		}
		if field != nil {
			a.Order = dumpinfo.OrderEvent
			a.EventTime, a.EventTimeUnit = field.Path, field.Unit
			a.Late += st.late
			a.EventTimeMissing += st.missing
			if st.seen {
				a.EventFirstNs, a.EventLastNs = st.firstEv, st.lastEv
			}
		}
	}
}
