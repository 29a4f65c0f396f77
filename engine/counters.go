package engine

import "encoding/binary"

// counters returns a snapshot of the ring's counters. Held figures are
// consistent with each other only approximately while the writer runs.
func (r *ring) counters() TopicCounters {
	var c TopicCounters
	c.EvictedAge = r.pubEvAge.Load()
	c.EvictedSize = r.pubEvSize.Load()
	c.RejectedOversize = r.oversize.load()
	c.LostToReaders = r.lost.Load()
	cur := cursor{r: r}
	for {
		l := r.last.Load()
		t, ts, tcum := r.tailState()
		if l == noEntry || t > l {
			c.Written, c.Bytes = ts, tcum
			return c
		}
		h, ok := r.readHeader(l & r.mask)
		phys := t & r.mask
		if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
			phys = 0
		}
		oldest, okOld := r.readHeader(phys)
		if !cur.valid(t) || !ok || !okOld {
			continue
		}
		c.Written, c.Bytes = h.seq+1, h.cum
		c.HeldMessages = h.seq + 1 - ts
		c.HeldBytes = l + entrySize(h.n) - t
		c.OldestNs, c.NewestNs = oldest.capNs, h.capNs
		return c
	}
}
