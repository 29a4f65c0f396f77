package capture

import "github.com/edr-lite/edr-lite/ingest"

// DefaultMaxTopics bounds the topics one source discovers when its options
// leave MaxTopics zero, so a flood of distinct ports or addresses cannot
// grow the topic table without bound.
const DefaultMaxTopics = 256

// mapping is the cached outcome of mapping one key: a topic id, or a
// refusal (Discover failed or the topic limit was reached) that is not
// retried for every packet.
type mapping struct {
	id ingest.TopicID
	ok bool
}

// mapper turns packets into topic ids through a Template, discovering each
// new topic once. A hit costs one map lookup with a string-free key and
// allocates nothing; a miss allocates the name and calls Sink.Discover.
// Not safe for concurrent use: each source goroutine owns one.
type mapper struct {
	tmpl    Template
	sink    ingest.Sink
	info    ingest.TopicInfo // Type, Source and MultiProducer for new topics
	max     int
	ids     map[topicKey]mapping
	order   []ingest.TopicID // discovered ids, for Offline on close
	lastKey topicKey
	last    mapping
	hasLast bool
	name    []byte
}

func newMapper(t Template, sink ingest.Sink, info ingest.TopicInfo, max int) *mapper {
	if max <= 0 {
		max = DefaultMaxTopics
	}
	return &mapper{tmpl: t, sink: sink, info: info, max: max, ids: make(map[topicKey]mapping)}
}

// lookup returns the topic of p; ok is false when p maps to no topic.
func (m *mapper) lookup(p *Packet) (ingest.TopicID, bool) {
	if !m.tmpl.Matches(p) {
		return 0, false
	}
	k := m.tmpl.key(p)
	if m.hasLast && k == m.lastKey {
		return m.last.id, m.last.ok
	}
	mp, found := m.ids[k]
	if !found {
		mp = m.discover(k, p)
	}
	m.lastKey, m.last, m.hasLast = k, mp, true
	return mp.id, mp.ok
}

func (m *mapper) discover(k topicKey, p *Packet) mapping {
	var mp mapping
	if len(m.order) < m.max {
		m.name, _ = m.tmpl.AppendName(m.name[:0], p)
		info := m.info
		info.Name = string(m.name)
		if id, err := m.sink.Discover(info); err == nil {
			mp = mapping{id: id, ok: true}
			m.order = append(m.order, id)
		}
	}
	if len(m.ids) < 4*m.max { // refusals are cached too, up to a bound
		m.ids[k] = mp
	}
	return mp
}

// offline reports every discovered topic offline.
func (m *mapper) offline() {
	for _, id := range m.order {
		m.sink.Offline(id)
	}
}

// topics returns how many topics were discovered.
func (m *mapper) topics() int { return len(m.order) }
