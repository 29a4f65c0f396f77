package mcap

import (
	"fmt"
	"slices"
)

// msgPos locates one message: in a chunk (chunkAt >= 0, recAt relative to
// its uncompressed records) or in the data section (chunkAt < 0, recAt the
// file offset).
type msgPos struct {
	logTime uint64
	chunkAt int64
	recAt   int64
}

// chunkCacheSize is how many decompressed chunks MessagesInTimeOrder keeps:
// enough for writers that put each channel in its own, overlapping, chunks.
const chunkCacheSize = 16

// MessagesInTimeOrder calls fn for every message in log_time order (equal
// times in file order), whatever the order of the file: a first pass
// locates every message, and when they are not already in order a second
// pass visits them sorted, keeping up to 16 decompressed chunks. Files in
// order (ours) are simply read twice. Lifetimes and errors as Messages; the
// pass locating the messages holds 24 bytes per message, bounded like
// everything the reader retains.
func (r *Reader) MessagesInTimeOrder(fn func(c *Channel, m *Message) error) error {
	var pos []msgPos
	sorted := true
	var v visitor
	v = visitor{chunkAt: -1, message: func(_ *Channel, m *Message) error {
		if n := len(pos); n > 0 && m.LogTime < pos[n-1].logTime {
			sorted = false
		}
		pos = append(pos, msgPos{m.LogTime, v.chunkAt, v.recAt})
		if uint64(len(pos))*24 > r.retainBudget() {
			return r.corrupt(v.recAt, "Message", fmt.Errorf("%w: more than %d messages to order", ErrTooLarge, len(pos)))
		}
		return nil
	}}
	if err := r.walk(&v); err != nil {
		return err
	}
	if sorted {
		return r.Messages(fn)
	}
	slices.SortStableFunc(pos, func(a, b msgPos) int {
		switch {
		case a.logTime < b.logTime:
			return -1
		case a.logTime > b.logTime:
			return 1
		}
		return 0
	})
	type cached struct {
		at      int64
		records []byte
		buf     []byte
		used    uint64
	}
	var cache []cached
	var tick uint64
	recordsOf := func(chunkAt int64) ([]byte, error) {
		tick++
		for i := range cache {
			if cache[i].at == chunkAt {
				cache[i].used = tick
				return cache[i].records, nil
			}
		}
		it := recIter{b: r.b[chunkAt:], base: chunkAt}
		rec, ok, _ := it.next()
		if !ok || rec.op != OpChunk {
			return nil, r.corrupt(chunkAt, "Chunk", ErrCorrupt) // the first pass read it: BUG if reached
		}
		slot := len(cache)
		if slot == chunkCacheSize {
			slot = 0
			for i := range cache {
				if cache[i].used < cache[slot].used {
					slot = i
				}
			}
		} else {
			cache = append(cache, cached{})
		}
		c := &cache[slot]
		var err error
		c.records, c.buf, _, err = r.chunkRecords(rec, c.buf[:0])
		if err != nil {
			return nil, err
		}
		c.at, c.used = chunkAt, tick
		return c.records, nil
	}
	var m Message
	for _, p := range pos {
		var body []byte
		if p.chunkAt < 0 {
			body = r.b[p.recAt+recordPrefixLen : p.recAt+recordPrefixLen+int64(le.Uint64(r.b[p.recAt+1:]))]
		} else {
			records, err := recordsOf(p.chunkAt)
			if err != nil {
				return err
			}
			body = records[p.recAt+recordPrefixLen : p.recAt+recordPrefixLen+int64(le.Uint64(records[p.recAt+1:]))]
		}
		m = Message{ChannelID: le.Uint16(body), Sequence: le.Uint32(body[2:]), LogTime: le.Uint64(body[6:]),
			PublishTime: le.Uint64(body[14:]), Data: body[messageFixedLen:]}
		if err := fn(v.chans[m.ChannelID], &m); err != nil {
			return err
		}
	}
	return nil
}
