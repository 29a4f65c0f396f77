package mcap

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// segmentCost is what the first pass of a Cursor keeps per segment, for the
// retain budget.
const segmentCost = 64

// segment is a stretch of the data section whose messages are read
// together: one Chunk, or a run of Message records outside chunks (between
// two chunks, or in a file without chunks).
type segment struct {
	chunkAt  int64  // file offset of the Chunk record; -1 for a run
	first    int64  // offset of the first Message record (in the chunk's records, or in the file for a run)
	end      int64  // run: file offset just past its last Message record
	min, max uint64 // log times
	n        uint64 // messages
	sorted   bool   // log times never decrease in file order
}

// msgPos is a message of a segment read out of file order.
type msgPos struct {
	logTime uint64
	at      int64 // record offset, as segment.first
}

// segCursor reads one segment: in file order (walking its records) or,
// for a segment out of order read in time order, through pos.
type segCursor struct {
	seg     int    // index in Cursor.segs: equal times go to the lower one
	t       uint64 // log time of the head message
	at      int64  // record offset of the head message
	left    uint64 // messages after the head (walking)
	ordered bool   // reading through pos
	pos     []msgPos
	i       int // head index in pos
}

type cachedChunk struct {
	at      int64  // Chunk record offset
	records []byte // uncompressed records (buf, or the mapping)
	buf     []byte
	used    uint64
}

// Cursor reads the messages of a file one at a time, in log_time order
// (equal times in file order) or in file order, whatever the order the
// writer used. It comes from (*Reader).Cursor, which makes a first pass
// over the file; Next then reads the messages.
//
// Costs. The first pass reads every record as Scan does (chunks
// decompressed and CRC-checked, the figures of Info) and keeps, per chunk
// (and per run of messages outside chunks), its time range, position and
// whether its messages are in order: about 64 bytes per chunk, nothing per
// message. Reading then decompresses each chunk again when its first message
// is due. Chunks whose time ranges overlap are held decompressed together,
// up to ReaderOptions.MaxChunkSize: a file whose overlapping chunks need
// more at one instant is refused in time order (ErrTooLarge, at a chunk of
// that peak) rather than decompressed again and again; file order holds one
// chunk at a time whatever the file. A chunk whose own messages are out of
// order costs 16 bytes per message while it is being read (up to twice
// that is kept for reuse). A file in order
// (edr-lite writes in order) holds one or two chunks at a time;
// uncompressed chunks are read in place from the mapping. Reading a file
// again the same way (SeekTime, FileOrder) allocates nothing: segment
// cursors, positions and buffers are reused.
//
// A Cursor is not safe for concurrent use, nor with other reads of its
// Reader.
type Cursor struct {
	r     *Reader
	info  *Info
	chans []*Channel // by id
	segs  []segment  // file order
	byMin []int      // segment indexes by min log time, ties in file order

	fileOrder bool
	from      uint64
	act       int // next segment to activate (index into byMin, or into segs in file order)
	h         segHeap
	cur       *segCursor
	done      bool
	free      []*segCursor   // done with, for reuse
	posFree   [64][][]msgPos // position slices for reuse, by capacity 2^i

	cache   []cachedChunk // chunks of the segments being read
	cacheAt map[int64]int // cache index by chunk offset
	bytes   int           // decompression buffers in cache
	budget  int           // ReaderOptions.MaxChunkSize (tests lower it)
	spare   [][]byte      // buffers of dropped chunks, for reuse
	tick    uint64
	msg     Message

	peak    uint64 // most decompressed bytes of chunks overlapping at one instant
	peakAt  int64  // a chunk of that peak
	checked bool   // the peak was checked against the budget since the last restart
}

// Cursor makes the first pass over the file (see Cursor's costs) and
// returns a Cursor positioned before the first message in log_time order.
func (r *Reader) Cursor() (*Cursor, error) {
	c := &Cursor{r: r, budget: int(min(r.opt.MaxChunkSize, math.MaxInt)), cacheAt: map[int64]int{}}
	open := -1 // run of messages outside chunks being extended
	info, chans, err := r.scan(func(v *visitor, m *Message) error {
		var s *segment
		switch n := len(c.segs); {
		case v.chunkAt >= 0:
			open = -1
			if n > 0 && c.segs[n-1].chunkAt == v.chunkAt {
				s = &c.segs[n-1]
			}
		case open >= 0:
			s = &c.segs[open]
		}
		if s == nil {
			if uint64(len(c.segs)+1)*segmentCost > r.retainBudget() {
				return r.corrupt(v.recAt, "Message", fmt.Errorf("%w: more than %d chunks and runs of messages", ErrTooLarge, len(c.segs)))
			}
			c.segs = append(c.segs, segment{chunkAt: v.chunkAt, first: v.recAt, min: m.LogTime, max: m.LogTime, sorted: true})
			s = &c.segs[len(c.segs)-1]
			if v.chunkAt < 0 {
				open = len(c.segs) - 1
			}
		}
		if m.LogTime < s.max {
			s.sorted = false
		}
		s.min, s.max = min(s.min, m.LogTime), max(s.max, m.LogTime)
		s.n++
		if v.chunkAt < 0 {
			s.end = v.recAt + recordPrefixLen + messageFixedLen + int64(len(m.Data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.info, c.chans = info, chans
	c.byMin = make([]int, len(c.segs))
	for i := range c.byMin {
		c.byMin[i] = i
	}
	slices.SortStableFunc(c.byMin, func(a, b int) int { return cmp.Compare(c.segs[a].min, c.segs[b].min) })
	c.peak, c.peakAt = c.overlap()
	r.scratch = nil // the first pass's buffer: the cache has its own
	c.SeekTime(0)
	return c, nil
}

// Info returns the figures of the first pass (as Scan: Scanned is true).
func (c *Cursor) Info() *Info { return c.info }

// Channels returns the file's channels by id (nil where an id is unused).
// Valid until the Reader is closed.
func (c *Cursor) Channels() []*Channel { return c.chans }

// SeekTime restarts the cursor in log_time order at the first message with
// log_time >= from. Chunks that end before from are not read.
func (c *Cursor) SeekTime(from uint64) { c.restart(false, from) }

// FileOrder restarts the cursor in file order (the order Messages reads).
func (c *Cursor) FileOrder() { c.restart(true, 0) }

func (c *Cursor) restart(fileOrder bool, from uint64) {
	c.fileOrder, c.from = fileOrder, from
	for _, sc := range c.h {
		c.release(sc)
	}
	c.act, c.h, c.cur, c.done, c.checked = 0, c.h[:0], nil, false, false
}

// release keeps a segment cursor that is done, and its positions, for
// reuse: a second pass over a file allocates nothing.
func (c *Cursor) release(sc *segCursor) {
	if at := c.segs[sc.seg].chunkAt; at >= 0 {
		c.dropChunk(at)
	}
	if cap(sc.pos) > 0 {
		k := bits.Len64(uint64(cap(sc.pos)) - 1)
		c.posFree[k] = append(c.posFree[k], sc.pos[:0])
	}
	sc.pos = nil
	c.free = append(c.free, sc)
}

// getPos returns an empty slice with room for n >= 1 positions: a released
// one of the same power-of-two size, or a new one.
func (c *Cursor) getPos(n uint64) []msgPos {
	k := bits.Len64(n - 1)
	if l := len(c.posFree[k]); l > 0 {
		p := c.posFree[k][l-1]
		c.posFree[k] = c.posFree[k][:l-1]
		return p
	}
	return make([]msgPos, 0, 1<<k)
}

// Next moves to the next message and reports whether there is one. Errors
// are *CorruptError values (the first pass checked every record, so one
// means the mapping changed underneath).
func (c *Cursor) Next() (bool, error) {
	if c.done {
		return false, nil
	}
	if !c.checked {
		c.checked = true
		if !c.fileOrder && c.peak > uint64(c.budget) {
			return false, c.fail(c.r.corrupt(c.peakAt, "Chunk", fmt.Errorf("%w: chunks overlapping in time need %d MiB decompressed at once to be read in time order, over the reader's limit of %d MiB (offline tools: --max-memory)",
				ErrTooLarge, (c.peak+(1<<20)-1)>>20, c.budget>>20)))
		}
	}
	for {
		if c.cur != nil {
			more, err := c.advance(c.cur)
			if err != nil {
				return false, c.fail(err)
			}
			if more {
				heap.Fix(&c.h, 0)
			} else {
				c.release(heap.Pop(&c.h).(*segCursor))
			}
			c.cur = nil
		}
		if err := c.activate(); err != nil {
			return false, c.fail(err)
		}
		if len(c.h) == 0 {
			c.done = true
			return false, nil
		}
		c.cur = c.h[0]
		if c.cur.t < c.from {
			continue
		}
		if err := c.load(c.cur); err != nil {
			return false, c.fail(err)
		}
		return true, nil
	}
}

func (c *Cursor) fail(err error) error {
	c.done, c.cur = true, nil
	return err
}

// Channel returns the current message's channel; valid until the Reader is
// closed.
func (c *Cursor) Channel() *Channel { return c.chans[c.msg.ChannelID] }

// Message returns the current message. It and its Data are valid until the
// next Next, SeekTime or FileOrder: Data aliases the mapping or a
// decompressed chunk.
func (c *Cursor) Message() *Message { return &c.msg }

// activate starts reading every segment that may hold the next message:
// in time order, all segments whose first log time is not after the
// earliest head; in file order, the next segment once the last is done.
func (c *Cursor) activate() error {
	for {
		var s int
		if c.fileOrder {
			if len(c.h) > 0 || c.act >= len(c.segs) {
				return nil
			}
			s = c.act
		} else {
			if c.act >= len(c.byMin) {
				return nil
			}
			s = c.byMin[c.act]
			if len(c.h) > 0 && c.segs[s].min > c.h[0].t {
				return nil
			}
		}
		c.act++
		seg := &c.segs[s]
		if !c.fileOrder && seg.max < c.from {
			continue
		}
		var sc *segCursor
		if n := len(c.free); n > 0 {
			sc, c.free = c.free[n-1], c.free[:n-1]
		} else {
			sc = &segCursor{}
		}
		*sc = segCursor{seg: s, t: seg.min, at: seg.first, left: seg.n - 1}
		if !c.fileOrder && !seg.sorted {
			if err := c.order(sc); err != nil {
				return err
			}
		}
		heap.Push(&c.h, sc)
	}
}

// order locates the messages of an out-of-order segment and sorts them by
// log time (stable: equal times in file order).
func (c *Cursor) order(sc *segCursor) error {
	seg := &c.segs[sc.seg]
	records, err := c.records(seg)
	if err != nil {
		return err
	}
	sc.ordered, sc.pos = true, c.getPos(seg.n)
	it := recIter{b: records, off: int(seg.first)}
	for uint64(len(sc.pos)) < seg.n {
		rec, ok, _ := it.next()
		if !ok {
			return c.changed(seg, it.off)
		}
		if rec.op != OpMessage {
			continue
		}
		if len(rec.body) < messageFixedLen {
			return c.changed(seg, int(rec.at))
		}
		sc.pos = append(sc.pos, msgPos{le.Uint64(rec.body[6:]), rec.at})
	}
	slices.SortStableFunc(sc.pos, func(a, b msgPos) int { return cmp.Compare(a.logTime, b.logTime) })
	sc.t, sc.at = sc.pos[0].logTime, sc.pos[0].at
	return nil
}

// advance moves sc to its segment's next message; false when there is none.
func (c *Cursor) advance(sc *segCursor) (bool, error) {
	if sc.ordered {
		sc.i++
		if sc.i >= len(sc.pos) {
			return false, nil
		}
		sc.t, sc.at = sc.pos[sc.i].logTime, sc.pos[sc.i].at
		return true, nil
	}
	if sc.left == 0 {
		return false, nil
	}
	seg := &c.segs[sc.seg]
	records, err := c.records(seg)
	if err != nil {
		return false, err
	}
	it := recIter{b: records, off: int(sc.at)}
	it.next() // the current message, read by load
	for {
		rec, ok, _ := it.next()
		if !ok {
			return false, c.changed(seg, it.off)
		}
		if rec.op != OpMessage {
			continue
		}
		if len(rec.body) < messageFixedLen {
			return false, c.changed(seg, int(rec.at))
		}
		sc.at, sc.t = rec.at, le.Uint64(rec.body[6:])
		sc.left--
		return true, nil
	}
}

// load decodes sc's head message into c.msg.
func (c *Cursor) load(sc *segCursor) error {
	seg := &c.segs[sc.seg]
	records, err := c.records(seg)
	if err != nil {
		return err
	}
	it := recIter{b: records, off: int(sc.at)}
	rec, ok, _ := it.next()
	if !ok || rec.op != OpMessage || len(rec.body) < messageFixedLen {
		return c.changed(seg, int(sc.at))
	}
	b := rec.body
	c.msg = Message{ChannelID: le.Uint16(b), Sequence: le.Uint32(b[2:]), LogTime: le.Uint64(b[6:]),
		PublishTime: le.Uint64(b[14:]), Data: b[messageFixedLen:]}
	if int(c.msg.ChannelID) >= len(c.chans) || c.chans[c.msg.ChannelID] == nil {
		return c.changed(seg, int(sc.at))
	}
	return nil
}

// changed reports a segment that no longer reads as it did in the first
// pass.
func (c *Cursor) changed(seg *segment, at int) error {
	off, field := int64(at), "Message"
	if seg.chunkAt >= 0 {
		off, field = seg.chunkAt, fmt.Sprintf("Chunk.records+%d: Message", at)
	}
	return c.r.corrupt(off, field, fmt.Errorf("%w: the file changed while it was read", ErrCorrupt))
}

// records returns the records of a segment: for a run, the file up to the
// run's end (offsets are file offsets); for a chunk, its uncompressed
// records, from the cache or decompressed into it.
func (c *Cursor) records(seg *segment) ([]byte, error) {
	if seg.chunkAt < 0 {
		if seg.end > int64(len(c.r.b)) {
			return nil, c.r.corrupt(seg.first, "Message", ErrTruncated)
		}
		return c.r.b[:seg.end], nil
	}
	c.tick++
	if i, ok := c.cacheAt[seg.chunkAt]; ok {
		e := &c.cache[i]
		e.used = c.tick
		return e.records, nil
	}
	it := recIter{b: c.r.b[seg.chunkAt:], base: seg.chunkAt}
	rec, ok, _ := it.next()
	if !ok || rec.op != OpChunk {
		return nil, c.r.corrupt(seg.chunkAt, "Chunk", fmt.Errorf("%w: the file changed while it was read", ErrCorrupt))
	}
	// Drop the least recently used chunks while over budget; the new one
	// is always kept, in a buffer of a dropped one when there is one.
	for len(c.cache) > 0 && c.bytes >= c.budget {
		lru := 0
		for i := range c.cache {
			if c.cache[i].used < c.cache[lru].used {
				lru = i
			}
		}
		c.dropCached(lru)
	}
	buf := c.spareFor(rec)
	records, buf, _, err := c.r.chunkRecords(rec, buf[:0])
	if err != nil {
		c.spare = append(c.spare, buf)
		return nil, err
	}
	c.cacheAt[seg.chunkAt] = len(c.cache)
	c.cache = append(c.cache, cachedChunk{at: seg.chunkAt, records: records, buf: buf, used: c.tick})
	c.bytes += cap(buf)
	return records, nil
}

// spareFor takes the spare buffer that best fits the chunk rec decompresses
// to (the smallest large enough, else the largest, to grow), so that
// buffers reused for chunks of different sizes settle.
func (c *Cursor) spareFor(rec record) []byte {
	if len(c.spare) == 0 {
		return nil
	}
	var size uint64
	if len(rec.body) >= chunkFixedLen {
		size = le.Uint64(rec.body[16:])
	}
	best := 0
	for i, b := range c.spare {
		fits, bestFits := uint64(cap(b)) >= size, uint64(cap(c.spare[best])) >= size
		switch {
		case fits && (!bestFits || cap(b) < cap(c.spare[best])):
			best = i
		case !fits && !bestFits && cap(b) > cap(c.spare[best]):
			best = i
		}
	}
	buf := c.spare[best]
	c.spare[best] = c.spare[len(c.spare)-1]
	c.spare = c.spare[:len(c.spare)-1]
	return buf
}

// dropChunk forgets the decompressed records of the chunk at chunkAt (its
// segment is done), keeping the buffer for the next chunk.
func (c *Cursor) dropChunk(chunkAt int64) {
	if i, ok := c.cacheAt[chunkAt]; ok {
		c.dropCached(i)
	}
}

func (c *Cursor) dropCached(i int) {
	if buf := c.cache[i].buf; cap(buf) > 0 {
		c.bytes -= cap(buf)
		c.spare = append(c.spare, buf)
	}
	delete(c.cacheAt, c.cache[i].at)
	last := len(c.cache) - 1
	if i != last {
		c.cache[i] = c.cache[last]
		c.cacheAt[c.cache[i].at] = i
	}
	c.cache[last] = cachedChunk{}
	c.cache = c.cache[:last]
}

// segHeap orders segment cursors by head log time, then segment.
type segHeap []*segCursor

func (h segHeap) Len() int { return len(h) }
func (h segHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seg < h[j].seg
}
func (h segHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *segHeap) Push(x any)   { *h = append(*h, x.(*segCursor)) }
func (h *segHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// MessagesInTimeOrder calls fn for every message in log_time order (equal
// times in file order), whatever the order of the file, through a Cursor
// (see its costs). Lifetimes and errors as Messages.
func (r *Reader) MessagesInTimeOrder(fn func(c *Channel, m *Message) error) error {
	c, err := r.Cursor()
	if err != nil {
		return err
	}
	for {
		ok, err := c.Next()
		if err != nil || !ok {
			return err
		}
		if err := fn(c.Channel(), c.Message()); err != nil {
			return err
		}
	}
}
