package pack

import (
	"encoding/binary"
)

// TopicSummary is the per-topic accounting kept in the index.
type TopicSummary struct {
	Topic    string // name#channel
	Name     string
	Channel  string
	Messages uint64
	Bytes    uint64 // meta + data bytes, uncompressed
	FirstNs  int64  // earliest message time (gen_ts, or frame time when 0)
	LastNs   int64  // latest message time
}

// Summary describes a file from its index, without reading frames.
type Summary struct {
	Header     FileHeader
	Frames     int
	Messages   uint64
	FirstNs    int64 // smallest frame time
	LastNs     int64 // largest frame end time (max of time, done_time)
	Topics     []TopicSummary
	Metadata   []string // names of metadata sections
	Indexed    bool     // the file had a valid index (else it was scanned)
	TimeSorted bool     // frame times never decrease in file order
	Size       int64    // file size in bytes
}

func appendMetadataPayload(dst []byte, name string, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return append(dst, data...)
}

func parseMetadataPayload(b []byte) (name string, data []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

// buildIndex encodes the index section payload:
//
//	frame count u32 | topic count u32 | metadata count u32 | flags u32
//	frame entries: offset u64, time i64, end i64 (IndexEntrySize each)
//	topics: uvarint len, name, uvarint len, channel, uvarint messages,
//	        uvarint bytes, varint first, varint last
//	metadata: uvarint len, name, uvarint section offset
func buildIndex(entries []indexEntry, timeSorted bool, topics []topicStat, md []namedBlob, mdOffs []int64) []byte {
	b := make([]byte, IndexFixedSize, IndexFixedSize+len(entries)*IndexEntrySize+len(topics)*32)
	le.PutUint32(b[0:], uint32(len(entries)))
	le.PutUint32(b[4:], uint32(len(topics)))
	le.PutUint32(b[8:], uint32(len(md)))
	var flags uint32
	if timeSorted {
		flags |= indexFlagTimeSorted
	}
	le.PutUint32(b[12:], flags)
	for _, e := range entries {
		b = le.AppendUint64(b, uint64(e.off))
		b = le.AppendUint64(b, uint64(e.timeNs))
		b = le.AppendUint64(b, uint64(e.endNs))
	}
	for _, t := range sortedTopics(topics) {
		b = binary.AppendUvarint(b, uint64(len(t.name)))
		b = append(b, t.name...)
		b = binary.AppendUvarint(b, uint64(len(t.channel)))
		b = append(b, t.channel...)
		b = binary.AppendUvarint(b, t.messages)
		b = binary.AppendUvarint(b, t.bytes)
		b = binary.AppendVarint(b, t.firstNs)
		b = binary.AppendVarint(b, t.lastNs)
	}
	for i, m := range md {
		b = binary.AppendUvarint(b, uint64(len(m.name)))
		b = append(b, m.name...)
		b = binary.AppendUvarint(b, uint64(mdOffs[i]))
	}
	return b
}

// index is a decoded index. Frame entries stay in the (mapped) payload and
// are read in place.
type index struct {
	entries    []byte // n * IndexEntrySize
	n          int
	timeSorted bool
	topics     []TopicSummary
	metaNames  []string
	metaOffs   []int64
	metaIdx    map[string]int // metaNames by name, built by Reader.Metadata
}

func (x *index) entry(i int) (off, timeNs, endNs int64) {
	e := x.entries[i*IndexEntrySize:]
	return int64(le.Uint64(e)), int64(le.Uint64(e[8:])), int64(le.Uint64(e[16:]))
}

// parseIndex decodes an index payload; every count is bounded by the
// payload's length before anything is allocated.
func parseIndex(b []byte) (*index, string) {
	if len(b) < IndexFixedSize {
		return nil, "index shorter than its fixed part"
	}
	nf, nt, nm := uint64(le.Uint32(b)), uint64(le.Uint32(b[4:])), uint64(le.Uint32(b[8:]))
	flags := le.Uint32(b[12:])
	rest := b[IndexFixedSize:]
	if nf > uint64(len(rest))/IndexEntrySize {
		return nil, "index frame count exceeds its length"
	}
	x := &index{entries: rest[:nf*IndexEntrySize], n: int(nf), timeSorted: flags&indexFlagTimeSorted != 0}
	rest = rest[nf*IndexEntrySize:]
	// Each topic takes at least 6 bytes, each metadata entry at least 2.
	if nt > uint64(len(rest))/6 || nm > uint64(len(rest))/2 {
		return nil, "index topic or metadata count exceeds its length"
	}
	str := func() (string, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return "", false
		}
		s := string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		return s, true
	}
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(rest)
		if k <= 0 {
			return 0, false
		}
		rest = rest[k:]
		return v, true
	}
	sv := func() (int64, bool) {
		v, k := binary.Varint(rest)
		if k <= 0 {
			return 0, false
		}
		rest = rest[k:]
		return v, true
	}
	x.topics = make([]TopicSummary, 0, nt)
	for i := uint64(0); i < nt; i++ {
		var t TopicSummary
		var ok1, ok2, ok3, ok4, ok5, ok6 bool
		t.Name, ok1 = str()
		t.Channel, ok2 = str()
		t.Messages, ok3 = uv()
		t.Bytes, ok4 = uv()
		t.FirstNs, ok5 = sv()
		t.LastNs, ok6 = sv()
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
			return nil, "index topic table truncated"
		}
		t.Topic = Topic(t.Name, t.Channel)
		x.topics = append(x.topics, t)
	}
	for i := uint64(0); i < nm; i++ {
		name, ok1 := str()
		off, ok2 := uv()
		if !ok1 || !ok2 || off > 1<<62 {
			return nil, "index metadata table truncated"
		}
		x.metaNames = append(x.metaNames, name)
		x.metaOffs = append(x.metaOffs, int64(off))
	}
	if len(rest) != 0 {
		return nil, "index has trailing bytes"
	}
	return x, ""
}

// accounting collects the index of frames as they are written or scanned.
type accounting struct {
	entries    []indexEntry
	timeSorted bool
	lastTime   int64
	topicIdx   map[string]map[string]int
	topics     []topicStat
}

func newAccounting() accounting {
	return accounting{timeSorted: true, topicIdx: map[string]map[string]int{}}
}

// add accounts the frame f at offset off; table is its block-length table.
func (a *accounting) add(f *Frame, off int64, h *frameHeader, table []byte) {
	if len(a.entries) > 0 && h.timeNs < a.lastTime {
		a.timeSorted = false
	}
	a.lastTime = h.timeNs
	a.entries = append(a.entries, indexEntry{off: off, timeNs: h.timeNs, endNs: h.endNs})
	for i := range f.msgs {
		m := &f.msgs[i]
		byCh := a.topicIdx[m.Name]
		if byCh == nil {
			byCh = map[string]int{}
			a.topicIdx[m.Name] = byCh
		}
		ti, ok := byCh[m.Channel]
		t := m.GenTs
		if t == 0 {
			t = h.timeNs
		}
		if !ok {
			ti = len(a.topics)
			byCh[m.Channel] = ti
			a.topics = append(a.topics, topicStat{name: m.Name, channel: m.Channel, firstNs: t, lastNs: t})
		}
		s := &a.topics[ti]
		s.messages++
		s.bytes += uint64(len(m.Meta))
		if di := int(m.DataIndex); di >= 0 && 4*di+4 <= len(table) {
			s.bytes += uint64(le.Uint32(table[4*di:]))
		}
		s.firstNs = min(s.firstNs, t)
		s.lastNs = max(s.lastNs, t)
	}
}
