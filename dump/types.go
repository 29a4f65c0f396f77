package dump

import "github.com/edr-lite/edr-lite/ingest"

// A topic's type may change inside a dump (its producer restarted with
// another schema; engine.Window.Types). The dumper hands each message to
// the Writer with the TopicInfo of its type span: one pointer per (topic,
// type span), so a writer sees a change of type as a change of pointer,
// also behind the reorder stage, which passes the pointer along.

// typeTracker tells a writer when to record a topic's type: before its
// first message and whenever the type differs from the one recorded last.
// Per message it costs one map lookup by pointer. Dumper goroutine only.
type typeTracker struct {
	slots map[*ingest.TopicInfo]*typeSlot
	byKey map[string]*typeSlot
}

type typeSlot struct{ cur *ingest.TopicInfo }

func newTypeTracker() typeTracker {
	return typeTracker{slots: map[*ingest.TopicInfo]*typeSlot{}, byKey: map[string]*typeSlot{}}
}

// changed reports whether t's type must be recorded before its message:
// the first message of the topic, or a type other than the last recorded.
func (tr *typeTracker) changed(t *ingest.TopicInfo) bool {
	s, ok := tr.slots[t]
	if !ok {
		key := t.Name + "#" + t.Channel
		if s = tr.byKey[key]; s == nil {
			s = &typeSlot{}
			tr.byKey[key] = s
		}
		tr.slots[t] = s
	}
	if s.cur == t {
		return false
	}
	prev := s.cur
	s.cur = t
	return prev == nil || !prev.Type.Equal(t.Type)
}

// spanInfos returns one TopicInfo per type span (info with the span's
// type); just info when there are no spans.
func spanInfos(info ingest.TopicInfo, spans []spanStart) []ingest.TopicInfo {
	out := make([]ingest.TopicInfo, max(len(spans), 1))
	for i := range out {
		out[i] = info
		if i < len(spans) {
			out[i].Type = spans[i].typ
		}
	}
	return out
}

// spanStart is where a type span starts (engine.TypeSpan, trimmed).
type spanStart struct {
	from uint64
	typ  ingest.Type
}
