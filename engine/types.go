package engine

import (
	"fmt"

	"github.com/edr-lite/edr-lite/ingest"
)

// A topic's type (message encoding and schema) is declared by its source
// at Discover, may be overridden by the configuration (TopicOverride.Type),
// is checked once (Config.CheckType) and may change when a producer
// restarts with another one: the new type applies from the first message
// ingested after that Discover. The recorder keeps, per topic, the spans
// of sequence numbers each type applies to, so a dump of a window that
// holds both writes each message under its own type (package dump).

// maxTypeSpans bounds a topic's type history. Spans that no longer cover
// any message the ring holds are dropped first; past this many changes
// within one ring's history the oldest span is dropped too, and the
// messages it covered are written under the next one.
const maxTypeSpans = 16

// TypeSpan is one type of a topic and the first message it applies to.
type TypeSpan struct {
	// FromSeq is the sequence number of the first message of this type
	// (Entry.Seq); 0 for the type the topic was discovered with.
	FromSeq uint64
	// AtNs is when the type was declared (the recorder's clock at
	// Discover); the dump records the capture time of FromSeq instead.
	AtNs int64
	Type ingest.Type
	// Err is why the declared type was refused (Config.CheckType); the
	// topic is then recorded as raw bytes (Type is ingest.Raw).
	Err error
}

// typeFor resolves the type a topic is recorded under: the configuration's
// override (the first TopicOverride matching the topic, when it sets a
// Type) or the source's declaration, raw when neither says; then checks it.
// It runs before the topic-table lock is taken: a check may parse a large
// schema.
func (r *Recorder) typeFor(info *ingest.TopicInfo) (ingest.Type, error) {
	t := info.Type
	for _, o := range r.cfg.Topics {
		if matchTopic(o.Match, info) {
			if !o.Type.IsZero() {
				t = o.Type
			}
			break
		}
	}
	if t.MessageEncoding == "" {
		return t.OrRaw(), nil // not declared: raw bytes, no error
	}
	check := r.cfg.CheckType
	if check == nil {
		check = func(i ingest.TopicInfo) error { return i.Type.Validate() }
	}
	ci := *info
	ci.Type = t
	if err := check(ci); err != nil {
		return ingest.Raw(t.Schema.Name), fmt.Errorf("engine: topic %q: type %s refused, recorded as raw bytes: %w",
			topicLabel(info), t, err)
	}
	return t, nil
}

// setType records a (re)discovered topic's type; r.mu is held. A type
// equal to the current one changes nothing; another one starts a span at
// the next message the ring stores. The caller is the topic's ingesting
// goroutine (the Sink contract), so no message of the topic is in flight.
func (t *topic) setType(typ ingest.Type, err error, atNs int64) {
	if n := len(t.types); n > 0 && t.types[n-1].Type.Equal(typ) {
		t.types[n-1].Err = err
		t.info.Type = typ
		return
	}
	from := uint64(0)
	if len(t.types) > 0 {
		t.typeChanges++
		from = t.ring.counters().Written
		// Drop spans every message of which the ring has evicted.
		_, oldest, _ := t.ring.tailState()
		i := 0
		for i+1 < len(t.types) && t.types[i+1].FromSeq <= oldest {
			i++
		}
		if len(t.types)-i >= maxTypeSpans {
			i = len(t.types) - maxTypeSpans + 1
		}
		t.types = append(t.types[:0], t.types[i:]...)
	}
	t.types = append(t.types, TypeSpan{FromSeq: from, AtNs: atNs, Type: typ, Err: err})
	t.info.Type = typ
}

// spans returns a copy of the topic's type history; r.mu is held.
func (t *topic) spans() []TypeSpan { return append([]TypeSpan(nil), t.types...) }

// TypeAt returns the span of w's topic that message seq belongs to: the
// last span starting at or before it (the oldest kept one for a message
// older than every span).
func (w *Window) TypeAt(seq uint64) *TypeSpan {
	i := len(w.Types) - 1
	for i > 0 && w.Types[i].FromSeq > seq {
		i--
	}
	if i < 0 {
		return nil
	}
	return &w.Types[i]
}

// topicLabel is "name", or "name#channel" when there is a channel.
func topicLabel(info *ingest.TopicInfo) string {
	if info.Channel == "" {
		return info.Name
	}
	return info.Name + "#" + info.Channel
}
