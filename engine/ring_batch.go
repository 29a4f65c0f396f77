package engine

import (
	"encoding/binary"

	"github.com/edr-lite/edr-lite/ingest"
)

// Staging a run of entries (ingest.BatchSink): the writer places and fills
// several entries, header and payload, beyond the newest committed one,
// where no reader looks (readers read up to last), then publishes them all
// with one store of last (commitBatch), or drops them (abortBatch).
//
// What staging changes before the commit stays valid on its own, as for a
// reservation: evictions and the published tail concern committed entries
// only (the writer's wHead, nextSeq and cumLen stay those of the committed
// entries until commitBatch, and eviction looks only at checkpoints below
// wHead); the first staged entry is placed exactly as append places one
// (its wrap marker becomes part of the ring, an empty ring's tail moves to
// it); a staged entry never overwrites the run's own first entry (the run
// ends there instead). The checkpoints staged entries wrote are cleared on
// abort, so none points into bytes that later entries overwrite.

// staging is the run of entries stageBatch placed and not yet published.
// Writer only.
type staging struct {
	active   bool
	n        int    // entries staged
	head     uint64 // where the next staged entry goes
	seq      uint64 // seq of the next staged entry
	cum      uint64 // payload bytes stored, the staged ones included
	curSeg   uint64 // absolute segment of the newest staged entry's start
	last     uint64 // position of the newest staged entry
	capNs    int64  // capture time of every entry of the run (clamped)
	cpFrom   uint64 // first segment whose checkpoint a staged entry wrote
	cpSet    bool
	firstPos uint64 // position of the run's first entry
}

// noCheckpoint marks a cleared checkpoint: its position is in no segment
// eviction looks at.
const noCheckpoint = ^uint64(0)

// stageBatch stages msgs (payloads in src) as entries captured at capNs and
// returns how many it staged (see ingest.BatchSink.StageBatch): it stops
// before a message larger than the ring's max packet (not counted: the
// caller hands it to append, which counts it) or one that would overwrite
// the run's first entry. It drops a run still open. Writer only.
func (r *ring) stageBatch(capNs int64, src []byte, msgs []ingest.BatchMessage) int {
	if r.st.active {
		r.abortBatch()
	}
	if len(msgs) == 0 || uint64(msgs[0].Len) > r.maxLen {
		return 0
	}
	// The longest head of the run that fits the max packet and half the
	// ring is placed as one block: one eviction check, one wrap check,
	// then each entry is only written.
	total, k := uint64(0), 0
	for _, m := range msgs {
		sz := entrySize(uint64(m.Len))
		if uint64(m.Len) > r.maxLen || total+sz > r.size/2 {
			break
		}
		total += sz
		k++
	}
	var pos uint64
	if k > 0 {
		r.res.active = false
		pos, capNs = r.placeRoom(capNs, total)
	} else {
		k = 1
		pos, capNs, _ = r.place(capNs, uint64(msgs[0].Len)) // fits: checked above
	}
	r.st = staging{active: true, head: pos, seq: r.nextSeq, cum: r.cumLen, curSeg: r.curSeg, capNs: capNs, firstPos: pos}
	r.stageBlock(src, msgs[:k])
	for i := k; i < len(msgs); i++ {
		m := msgs[i]
		n := uint64(m.Len)
		if n > r.maxLen {
			return i
		}
		pos, ok := r.stagePlace(n)
		if !ok {
			return i
		}
		r.stageEntry(pos, m.GenNs, src[m.Off:m.Off+m.Len])
	}
	return len(msgs)
}

// stagePlace makes room for a staged entry after the first, as place does
// for committed entries, and returns its position; false when it would
// overwrite the run's first entry.
func (r *ring) stagePlace(n uint64) (uint64, bool) {
	sz := entrySize(n)
	pos := r.st.head
	phys := pos & r.mask
	var skip uint64
	if r.size-phys < sz {
		skip = r.size - phys
	}
	end := pos + skip + sz
	if end > r.st.firstPos+r.size {
		return 0, false
	}
	oldTail := r.wTail
	// Committed entries sharing physical bytes with the new one go first
	// (all of them lie below wHead, the run's first entry).
	if end > r.size && end-r.size > r.wTail {
		r.evictTo(end - r.size)
	}
	capNs := r.st.capNs
	if r.cfg.retentionNs > 0 && r.wTail != r.wHead && capNs-r.tailCap > r.cfg.retentionNs+r.ageSlack {
		r.evictOlder(capNs - r.cfg.retentionNs)
	}
	if r.wTail == r.wHead {
		// Every committed entry is gone: the run's first entry (at wHead)
		// will be the oldest; tailSeq and tailCum already say so.
		r.tailCap = capNs
	}
	if r.wTail != oldTail {
		r.publishTail()
	}
	if skip > 0 {
		binary.LittleEndian.PutUint64(r.buf[phys:], wrapMark)
		pos += skip
	}
	return pos, true
}

// stageEntry writes a staged entry at pos: payload, header, checkpoint.
func (r *ring) stageEntry(pos uint64, genNs int64, p []byte) {
	st := &r.st
	n := uint64(len(p))
	if g := pos >> r.segShift; g != st.curSeg {
		if !st.cpSet {
			st.cpFrom, st.cpSet = g, true
		}
		st.curSeg = g
		r.cps[g&r.segMask] = checkpoint{pos: pos, seq: st.seq, cum: st.cum, capNs: st.capNs}
	}
	phys := pos & r.mask
	e := r.buf[phys : phys+entryHeaderSize+n]
	copy(e[entryHeaderSize:], p)
	binary.LittleEndian.PutUint64(e[0:], n)
	binary.LittleEndian.PutUint64(e[8:], st.seq)
	binary.LittleEndian.PutUint64(e[16:], uint64(st.capNs))
	binary.LittleEndian.PutUint64(e[24:], uint64(genNs))
	st.cum += n
	binary.LittleEndian.PutUint64(e[32:], st.cum)
	st.seq++
	st.last = pos
	st.head = pos + entrySize(n)
	st.n++
}

// stageBlock writes the entries of msgs one after the other from r.st.head,
// where room was made for all of them (no wrap, no eviction between).
func (r *ring) stageBlock(src []byte, msgs []ingest.BatchMessage) {
	st := &r.st
	pos, seq, cum, curSeg, last := st.head, st.seq, st.cum, st.curSeg, st.last
	capNs := uint64(st.capNs)
	buf, mask, shift := r.buf, r.mask, r.segShift
	le := binary.LittleEndian
	for _, m := range msgs {
		n := uint64(m.Len)
		if g := pos >> shift; g != curSeg {
			if !st.cpSet {
				st.cpFrom, st.cpSet = g, true
			}
			curSeg = g
			r.cps[g&r.segMask] = checkpoint{pos: pos, seq: seq, cum: cum, capNs: st.capNs}
		}
		phys := pos & mask
		e := buf[phys : phys+entryHeaderSize+n]
		copy(e[entryHeaderSize:], src[m.Off:m.Off+m.Len])
		cum += n
		le.PutUint64(e[0:], n)
		le.PutUint64(e[8:], seq)
		le.PutUint64(e[16:], capNs)
		le.PutUint64(e[24:], uint64(m.GenNs))
		le.PutUint64(e[32:], cum)
		seq++
		last = pos
		pos += entrySize(n)
	}
	st.head, st.seq, st.cum, st.curSeg, st.last = pos, seq, cum, curSeg, last
	st.n += len(msgs)
}

// commitBatch publishes the staged run and returns how many entries it
// held (0: none was staged).
func (r *ring) commitBatch() int {
	st := &r.st
	if !st.active {
		return 0
	}
	st.active = false
	r.wHead, r.nextSeq, r.cumLen, r.curSeg = st.head, st.seq, st.cum, st.curSeg
	r.last.Store(st.last) // commit: readers may now read every entry of the run
	return st.n
}

// abortBatch drops the staged run: its entries were never visible, take no
// sequence numbers, and the checkpoints they wrote are cleared.
func (r *ring) abortBatch() {
	st := &r.st
	if !st.active {
		return
	}
	st.active = false
	if !st.cpSet {
		return
	}
	// A run spans at most the ring: len(r.cps)+1 segments.
	for g, k := st.cpFrom, 0; g <= st.curSeg && k <= len(r.cps); g, k = g+1, k+1 {
		if cp := &r.cps[g&r.segMask]; cp.pos>>r.segShift == g && cp.pos >= r.wHead {
			cp.pos = noCheckpoint
		}
	}
}
