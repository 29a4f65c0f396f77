package can

import (
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// msgTopic is one DBC message's topic on a bus, discovered at its first
// frame.
type msgTopic struct {
	m       *Message
	id      ingest.TopicID
	tried   bool
	ok      bool
	decoded atomic.Uint64
}

// busDecoder decodes a bus's frames by its DBC into the messages' topics.
type busDecoder struct {
	b      *Bus
	dbc    *DBC
	topics map[uint32]*msgTopic
	buf    []byte

	unknown, short, rejected atomic.Uint64
	mu                       sync.Mutex // guards the ID lists (written at most CANMaxUndecodableIDs times each)
	unknownIDs, shortIDs     []uint32
}

func newBusDecoder(b *Bus, d *DBC) *busDecoder {
	bd := &busDecoder{b: b, dbc: d, topics: map[uint32]*msgTopic{}}
	n := 0
	for _, m := range d.Messages {
		bd.topics[key(m.ID, m.Extended)] = &msgTopic{m: m}
		n = max(n, m.size)
	}
	bd.buf = make([]byte, n)
	return bd
}

func note(ids *[]uint32, mu *sync.Mutex, id uint32) {
	mu.Lock()
	defer mu.Unlock()
	if len(*ids) >= defaults.CANMaxUndecodableIDs {
		return
	}
	for _, v := range *ids {
		if v == id {
			return
		}
	}
	*ids = append(*ids, id)
}

func (bd *busDecoder) record(captureNs, genNs int64, f *Frame) {
	m, why := bd.dbc.Match(f)
	k := key(f.ID, f.Flags&Extended != 0)
	switch why {
	case NoSignals:
		return // a request carries no signals
	case Unknown:
		inc(&bd.unknown)
		if len(bd.unknownIDs) < defaults.CANMaxUndecodableIDs {
			note(&bd.unknownIDs, &bd.mu, k)
		}
		return
	case Short:
		inc(&bd.short)
		if len(bd.shortIDs) < defaults.CANMaxUndecodableIDs {
			note(&bd.shortIDs, &bd.mu, k)
		}
		return
	}
	t := bd.topics[k]
	m.Decode(bd.buf, f)
	if !t.tried {
		t.tried = true
		id, err := bd.b.sink.Discover(bd.b.info(bd.b.o.Topic+"/"+t.m.Name, t.m.Type))
		t.id, t.ok = id, err == nil
	}
	if !t.ok || !bd.b.sink.IngestAt(t.id, captureNs, genNs, bd.buf[:t.m.size]) {
		inc(&bd.rejected)
		return
	}
	inc(&t.decoded)
}

func (bd *busDecoder) stats(s *BusStats) {
	s.Unknown, s.Short = bd.unknown.Load(), bd.short.Load()
	s.Rejected += bd.rejected.Load()
	bd.mu.Lock()
	s.UnknownIDs = append([]uint32(nil), bd.unknownIDs...)
	s.ShortIDs = append([]uint32(nil), bd.shortIDs...)
	bd.mu.Unlock()
	s.Messages = map[string]uint64{}
	for _, t := range bd.topics {
		if n := t.decoded.Load(); n > 0 {
			s.Messages[t.m.Name] = n
			s.Decoded += n
		}
	}
}

func (bd *busDecoder) offline() {
	for _, t := range bd.topics {
		if t.ok {
			bd.b.sink.Offline(t.id)
		}
	}
}
