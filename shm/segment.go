package shm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
)

// segment is the consumer's view of one mapped segment file. Its methods are
// called from one goroutine (the segment's follower); its counters are
// atomics so that Stats may read them from anywhere.
type segment struct {
	path     string
	fd       int
	hdrMem   []byte // HeaderSize bytes; read-write when writable
	ring     []byte // capacity bytes, read-only
	writable bool
	h        header
	frozen   []byte // copy of the immutable header bytes taken at open
	c        cursors
	id       fileID
	mask     uint64
	info     ingest.TopicInfo
	typeErr  *TypeError // the declared type was not used (schema.go)
	owner    owner      // the producer process, for liveness
	pids     *pidTable
	ctime    int64 // the file's inode change time (put in place), ns

	rpos    uint64 // next record position to read
	nextSeq uint64 // sequence number expected next
	// rebaseSeq: the next record read sets nextSeq (the records before it
	// were skipped on purpose, ConsumerOptions.SkipExisting)
	rebaseSeq bool
	lastW     uint64 // write cursor seen last (it must never go back)
	scratch   []byte // private copy of a chunk; allocated on first data
	batch     int
	big       *bigBuffer // shared buffer for records larger than batch
	// direct, when set, takes records of directMin payload bytes or more
	// straight from the mapping into the recorder (directRecord).
	direct    ingest.DirectSink
	directMin uint32
	dirNow    int64 // capture time of direct records (read once per batch bytes of them)
	dirLeft   int   // direct record bytes left before dirNow is read again
	// batcher, when set, takes runs of records straight from the mapping
	// into the recorder (batchRecords); runMsgs and runSeqs are its
	// buffers (allocated on first data).
	batcher ingest.BatchSink
	runMsgs []ingest.BatchMessage
	runSeqs []uint64

	fenceWord atomic.Uint64

	received, bytes, lost, rejected atomic.Uint64
}

// frozenLen covers every immutable header field (through the schema
// encoding; the schema itself is copied once, at open).
const frozenLen = offImmutableEnd

// openSegment opens, checks and maps the segment file at path; pids (nil:
// none) shares pidfds among segments of one producer process. Only the
// mappings are kept: the file descriptor is closed before it returns.
func openSegment(path string, opts *ConsumerOptions, big *bigBuffer, pids *pidTable) (*segment, error) {
	fd, writable, err := openSegmentFile(path)
	if err != nil {
		return nil, err
	}
	s := &segment{path: path, fd: fd, writable: writable, batch: opts.BatchBytes, big: big, pids: pids}
	if err := s.init(opts); err != nil {
		s.close()
		return nil, err
	}
	closeFD(s.fd)
	s.fd = -1
	return s, nil
}

func (s *segment) fail(field string, off int64, err error) *SegmentError {
	return &SegmentError{Segment: s.path, Field: field, Offset: off, Err: err}
}

func (s *segment) init(opts *ConsumerOptions) error {
	fi, err := fstat(s.fd)
	if err != nil {
		return err
	}
	s.id, s.ctime = fi.id, fi.ctime
	if !fi.reg {
		return s.fail("file", 0, fmt.Errorf("%w: not a regular file", ErrCorrupt))
	}
	if !opts.ownerAllowed(fi.uid) {
		return s.fail("owner", 0, fmt.Errorf("%w: uid %d", ErrOwner, fi.uid))
	}
	if fi.size < HeaderSize || fi.size > HeaderSize+maxSchemaArea+MaxCapacity {
		return s.fail("total_size", offTotalSize, corruptf(ErrTruncated, "file is %d bytes, want %d..%d", fi.size, HeaderSize+MinCapacity, int64(HeaderSize+maxSchemaArea+MaxCapacity)))
	}
	if s.hdrMem, err = mapFile(s.fd, 0, HeaderSize, s.writable); err != nil {
		return err
	}
	h, fe := decodeHeader(s.hdrMem, fi.size, opts.MaxPayload)
	if fe != nil {
		return s.fail(fe.field, fe.offset, fe.err)
	}
	s.h = h
	s.owner = newOwner(h.pid, h.startNs, s.pids)
	s.frozen = bytes.Clone(s.hdrMem[:frozenLen])
	if want := SegmentFileName(h.name, h.chn); want != baseName(s.path) {
		return s.fail("name", offName, corruptf(ErrBadName, "topic %q channel %q belongs in file %q", h.name, h.chn, want))
	}
	if s.ring, err = mapFile(s.fd, int64(h.headerSize), int(h.capacity), false); err != nil {
		return err
	}
	s.mask = h.capacity - 1
	s.c = mapCursors(s.hdrMem, s.writable)
	s.directMin = opts.DirectMin
	if s.batch < 4096 {
		s.batch = 4096
	}
	if s.batch > int(h.capacity) {
		s.batch = int(h.capacity)
	}
	s.info = ingest.TopicInfo{Name: h.name, Channel: h.chn, Source: "shm:" + s.path}
	s.info.Type, s.typeErr = s.readType()
	w, t, err := s.cursors()
	if err != nil {
		return err
	}
	s.lastW, s.rpos = w, t
	return nil
}

// cursors loads and checks write_cursor and tail_cursor.
//
// The two are loaded one after the other, not as a snapshot. Loaded after
// write_cursor, the tail is at least as new, so w-t never exceeds the
// capacity when t <= w. But the tail may be ahead of w: the producer moves
// it before writing (by less than a lap), and it may have published a lot
// between our two loads. Then we load again; after a few tries, a reload of
// write_cursor *after* the tail is at least the start of the publish that
// stored that tail, so t-w < capacity must hold then.
func (s *segment) cursors() (w, t uint64, err error) {
	for try := 0; ; try++ {
		w = s.c.write.Load()
		t = s.c.tail.Load()
		if t <= w || try == 3 {
			break
		}
	}
	if t > w {
		w = s.c.write.Load()
		if t > w && t-w >= s.h.capacity {
			return 0, 0, s.fail("tail_cursor", offTailCursor, corruptf(nil, "%d leads write_cursor %d by a lap or more (capacity %d)", t, w, s.h.capacity))
		}
	} else if w-t > s.h.capacity {
		return 0, 0, s.fail("tail_cursor", offTailCursor, corruptf(nil, "%d trails write_cursor %d by more than the capacity %d", t, w, s.h.capacity))
	}
	if w&(RecordAlign-1) != 0 || w < s.lastW {
		return 0, 0, s.fail("write_cursor", offWriteCursor, corruptf(nil, "%d (last seen %d, must be a non-decreasing multiple of 8)", w, s.lastW))
	}
	if t&(RecordAlign-1) != 0 {
		return 0, 0, s.fail("tail_cursor", offTailCursor, corruptf(nil, "%d is not a multiple of 8", t))
	}
	s.lastW = w
	return w, t, nil
}

// fence orders the plain loads of the chunk copy before the following
// atomic load of tail_cursor: an atomic read-modify-write is a full barrier
// on every architecture Go supports (LOCK XADD, LDADDAL, LDREX/STREX+DMB).
func (s *segment) fence() { s.fenceWord.Add(1) }

// drain ingests every record up to the write cursor, at most budget chunks,
// and returns how many records it ingested and whether the segment was
// fully read. Records overwritten before or while they were read are
// counted as lost through the sequence gap.
func (s *segment) drain(sink ingest.Sink, id ingest.TopicID, budget int) (n int, done bool, err error) {
	s.dirLeft = 0 // the first direct record of this call reads the clock
	for ; budget > 0; budget-- {
		w, t, err := s.cursors()
		if err != nil {
			return n, false, err
		}
		if s.rpos < t {
			s.rpos = t // lapped: the sequence gap counts what was skipped
		}
		if s.rpos >= w { // caught up (or the producer is mid-way through a lap)
			return n, true, nil
		}
		start := s.rpos & s.mask
		if s.batcher != nil {
			k, handled, err := s.batchRecords(start, w, id)
			n += k
			if err != nil {
				return n, false, err
			}
			if handled {
				continue
			}
		}
		if s.direct != nil {
			k, handled, err := s.directRecord(start, w, id)
			n += k
			if err != nil {
				return n, false, err
			}
			if handled {
				continue
			}
		}
		length := min(w-s.rpos, s.h.capacity-start, uint64(s.batch))
		if s.scratch == nil {
			s.scratch = make([]byte, s.batch)
		}
		// Peek at the first record's length (untrusted, only to pick the
		// buffer: whatever is copied is validated again) so that a record
		// larger than the private buffer is not copied twice.
		var k int
		need := uint64(0)
		if length < s.h.capacity-start || length < w-s.rpos { // cut by the batch size
			if rec := s.ring[start : start+8]; binary.LittleEndian.Uint32(rec[4:]) == KindMessage {
				size := recordSize(uint64(binary.LittleEndian.Uint32(rec)))
				if size > length && size <= recordSize(uint64(s.h.maxPayload)) && size <= s.h.capacity-start && size <= w-s.rpos {
					need = size // plausible: else let the checked path judge it
				}
			}
		}
		if need == 0 {
			k, need, err = s.copyParse(s.scratch[:length], start, w, sink, id)
			n += k
			if err != nil {
				return n, false, err
			}
		}
		if need > 0 {
			// One record larger than the private buffer: read it alone
			// through the consumer's shared buffer.
			if need > s.h.capacity-start || need > w-s.rpos {
				return n, false, s.fail("record.length", int64(s.h.headerSize+start), corruptf(nil,
					"record of %d bytes at %d passes the ring end or write_cursor %d", need, s.rpos, w))
			}
			buf := s.big.lock(int(need))
			k, _, err = s.copyParse(buf[:need], start, w, sink, id)
			s.big.unlock()
			n += k
			if err != nil {
				return n, false, err
			}
		}
	}
	return n, false, nil
}

// DefaultDirectMin is the smallest record payload the consumer copies straight
// from the segment into a recorder that takes reservations
// (ingest.DirectSink): one copy instead of two (out of the segment, then
// into the ring). Smaller records go in runs straight from the mapping
// into a sink that takes them (ingest.BatchSink, batchRecords), else are
// copied out in chunks of BatchBytes and handed to IngestAt, which costs
// less per message for them than a reservation each (docs/performance.md,
// "producer → recorder against copy").
const DefaultDirectMin = 8 << 10

// directRecord ingests the record at s.rpos (ring offset start) straight
// from the mapping into the sink's reserved memory when it is a message of
// at least directMin bytes. handled false: it is not (or the topic takes no
// reservations); the caller reads it through the private buffer.
//
// The header is read once from shared memory into locals and only those are
// used. Every bound is checked on them before anything is read or
// reserved; an implausible header is left to the chunk path, which checks
// it again and names what is wrong. Then: a fence and the tail, so the
// header is known intact before its sequence number counts (as the chunk
// path decides with pos < t2); the reservation; the payload copy from the
// mapping; a fence and the tail again: if the producer has overwritten the
// record meanwhile the reservation is aborted and the record is counted
// lost through the sequence gap, exactly as an overwritten record of a
// chunk; else it is committed.
func (s *segment) directRecord(start, w uint64, id ingest.TopicID) (n int, handled bool, err error) {
	pos := s.rpos
	if s.h.capacity-start < RecordHeaderSize || w-pos < RecordHeaderSize {
		return 0, false, nil
	}
	le := binary.LittleEndian
	hdr := s.ring[start : start+RecordHeaderSize : start+RecordHeaderSize]
	length, kind := le.Uint32(hdr[0:]), le.Uint32(hdr[4:])
	seq, gen := le.Uint64(hdr[8:]), int64(le.Uint64(hdr[16:]))
	if kind != KindMessage || length < s.directMin || length > s.h.maxPayload {
		return 0, false, nil
	}
	size := recordSize(uint64(length))
	if size > w-pos || size > s.h.capacity-start {
		return 0, false, nil // the chunk path reports it, unless it was overwritten
	}
	s.fence()
	if t := s.c.tail.Load(); pos < t {
		s.rpos = t // overwritten before or while the header was read
		return 0, true, nil
	}
	// The header is the producer's: its sequence number counts.
	if !s.rebaseSeq && seq < s.nextSeq {
		return 0, false, s.fail("record.seq", int64(s.h.headerSize+start)+8, corruptf(nil, "%d after %d", seq, s.nextSeq-1))
	}
	sink := s.direct
	if s.dirLeft <= 0 { // one clock read per BatchBytes of direct records in a drain call, as per chunk
		s.dirNow, s.dirLeft = sink.Now(), s.batch
	}
	s.dirLeft -= int(size)
	now := s.dirNow
	dst, ok := sink.ReserveAt(id, now, gen, int(length))
	if ok && dst == nil {
		s.direct = nil // the topic takes no reservations: the chunk path from now on
		return 0, false, nil
	}
	if ok {
		copy(dst, s.ring[start+RecordHeaderSize:start+RecordHeaderSize+uint64(length)])
		if h := testHookDirectCopied; h != nil {
			h() // a test overwrites the record here
		}
		s.fence()
		if t2 := s.c.tail.Load(); pos < t2 {
			sink.Abort(id)
			s.rpos = t2 // the sequence gap counts it lost
			return 0, true, nil
		}
		sink.Commit(id)
	}
	if s.rebaseSeq {
		s.nextSeq, s.rebaseSeq = seq, false
	}
	if gap := seq - s.nextSeq; gap > 0 {
		s.lost.Add(gap)
		sink.Lost(id, now, gap)
	}
	s.nextSeq = seq + 1
	if ok {
		s.received.Add(1)
		s.bytes.Add(uint64(length))
	} else {
		s.rejected.Add(1) // refused by the recorder, as IngestAt refuses
	}
	s.rpos = pos + size
	return 1, true, nil
}

// maxRun is the most records batchRecords hands over in one run.
const maxRun = 256

// batchRecords ingests the run of records that starts at s.rpos (ring
// offset start) straight from the mapping into the sink (ingest.BatchSink),
// and returns handled false when it took none (the first record is
// large enough for directRecord, implausible, or refused by the sink): the
// caller then reads it through the other paths, which check it again and
// name what is wrong.
//
// The run is every message record from s.rpos up to the write cursor w,
// the ring end, BatchBytes and maxRun records, ending before the first
// record that is not plausible (kind, length, bounds, a sequence number
// going back) or large (directMin, when the sink takes reservations),
// plus the ring end's padding record when the run reaches it. Each header
// is read once from shared memory into locals. Then: one clock read, the
// sink stages the whole run (copying each payload from the mapping), a
// fence and the tail: if the producer has overwritten the run's first
// record meanwhile, the run is aborted and reading resumes at the tail
// (the sequence gap counts what was lost, exactly as for an overwritten
// chunk); else the headers read were intact, the run is committed (one
// store makes it visible), and the counters are added once.
func (s *segment) batchRecords(start, w uint64, id ingest.TopicID) (n int, handled bool, err error) {
	pos := s.rpos
	end := min(w, pos+(s.h.capacity-start), pos+uint64(s.batch))
	if s.runMsgs == nil {
		s.runMsgs, s.runSeqs = make([]ingest.BatchMessage, maxRun), make([]uint64, maxRun)
	}
	msgs, seqs := s.runMsgs[:0:maxRun], s.runSeqs[:maxRun:maxRun]
	ring, le := s.ring, binary.LittleEndian
	large := uint32(math.MaxUint32)
	if s.direct != nil {
		large = s.directMin
	}
	maxPay := s.h.maxPayload
	expect, rebase := s.nextSeq, s.rebaseSeq
	first := expect // the sequence number the run's gaps count from
	padTo := uint64(0)
	for pos < end && len(msgs) < maxRun {
		if end-pos < RecordAlign {
			break
		}
		off := pos & s.mask
		length, kind := le.Uint32(ring[off:]), le.Uint32(ring[off+4:])
		if kind != KindMessage {
			if kind == KindPadding && w-pos >= s.h.capacity-off {
				padTo = pos + (s.h.capacity - off) // the run ends at the ring end
			}
			break
		}
		if length > maxPay || length >= large {
			break
		}
		size := recordSize(uint64(length))
		if size > end-pos {
			break
		}
		hdr := ring[off : off+RecordHeaderSize : off+RecordHeaderSize]
		seq := le.Uint64(hdr[8:])
		if rebase {
			expect, first, rebase = seq, seq, false
		}
		if seq < expect {
			break
		}
		seqs[len(msgs)] = seq
		msgs = append(msgs, ingest.BatchMessage{GenNs: int64(le.Uint64(hdr[16:])), Off: uint32(off + RecordHeaderSize), Len: length})
		expect = seq + 1
		pos += size
	}
	if len(msgs) == 0 && padTo == 0 {
		return 0, false, nil
	}
	sink := s.batcher
	now := int64(0)
	staged := 0
	if len(msgs) > 0 {
		now = sink.Now()
		if staged = sink.StageBatch(id, now, ring, msgs); staged == 0 {
			return 0, false, nil // the sink takes no run now: IngestAt rejects and counts
		}
	}
	if h := testHookBatchStaged; h != nil {
		h() // a test overwrites the run here
	}
	s.fence()
	if t2 := s.c.tail.Load(); s.rpos < t2 {
		if staged > 0 {
			sink.AbortBatch(id)
		}
		s.rpos = t2 // the sequence gap counts the run lost
		return 0, true, nil
	}
	// Intact: the headers read are the producer's.
	if staged > 0 {
		sink.CommitBatch(id)
	}
	if staged < len(msgs) { // the sink's ring took fewer: the rest is read again
		pos = s.rpos + uint64(msgs[staged].Off-RecordHeaderSize) - start
		padTo = 0
	} else if padTo != 0 {
		pos = padTo
	}
	if staged > 0 {
		last := seqs[staged-1]
		if s.rebaseSeq {
			s.rebaseSeq = false
		}
		if gap := last + 1 - first - uint64(staged); gap > 0 {
			s.lost.Add(gap)
			sink.Lost(id, now, gap)
		}
		s.nextSeq = last + 1
		bytes := uint64(0)
		for _, m := range msgs[:staged] {
			bytes += uint64(m.Len)
		}
		s.received.Add(uint64(staged))
		s.bytes.Add(bytes)
	}
	s.rpos = pos
	return staged, true, nil
}

// testHookBatchStaged, when set (by a test, before the consumer runs), is
// called between batchRecords' staging and its re-check of the tail.
var testHookBatchStaged func()

// testHookDirectCopied, when set (by a test, before the consumer runs), is
// called between directRecord's copy and its re-check of the tail.
var testHookDirectCopied func()

// copyParse copies chunk from ring offset start, validates it against the
// tail loaded after a fence, and parses it.
func (s *segment) copyParse(chunk []byte, start, w uint64, sink ingest.Sink, id ingest.TopicID) (int, uint64, error) {
	copy(chunk, s.ring[start:start+uint64(len(chunk))])
	s.fence()
	t2 := s.c.tail.Load()
	return s.parse(chunk, w, t2, sink, id)
}

// bigBuffer is a buffer shared by a consumer's segments for the rare record
// larger than a segment's private buffer (BatchBytes), so that memory does
// not grow with the number of segments times their largest record. Safe for
// concurrent use.
type bigBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// lock returns the buffer, at least n bytes, held until unlock.
func (b *bigBuffer) lock(n int) []byte {
	b.mu.Lock()
	if len(b.buf) < n {
		b.buf = make([]byte, n)
	}
	return b.buf
}

func (b *bigBuffer) unlock() { b.mu.Unlock() }

// parse walks the private copy chunk of the records starting at s.rpos and
// ingests the intact ones. Every field is checked against the chunk, the
// write cursor and the segment's limits before use.
//
// need > 0 reports that the first record of the chunk is need bytes long,
// more than the chunk holds (the caller reads it through a larger buffer).
func (s *segment) parse(chunk []byte, w, t2 uint64, sink ingest.Sink, id ingest.TopicID) (n int, need uint64, err error) {
	le := binary.LittleEndian
	now := sink.Now()
	bytes, rejected := uint64(0), uint64(0)
	defer func() {
		s.received.Add(uint64(n) - rejected)
		s.bytes.Add(bytes)
		s.rejected.Add(rejected)
	}()
	pos := s.rpos
	off := uint64(0)
	atRingEnd := (s.rpos&s.mask)+uint64(len(chunk)) == s.h.capacity
walk:
	for off < uint64(len(chunk)) {
		if pos < t2 {
			// Overwritten while we copied: resume at the new tail.
			s.rpos = t2
			return n, 0, nil
		}
		rest := uint64(len(chunk)) - off
		fileOff := int64(s.h.headerSize + (pos & s.mask))
		if rest < 8 {
			return n, 0, s.fail("record.kind", fileOff+4, corruptf(nil, "record header cut by the ring end or write cursor %d", w))
		}
		length := le.Uint32(chunk[off:])
		kind := le.Uint32(chunk[off+4:])
		switch kind {
		case KindPadding:
			skip := s.h.capacity - (pos & s.mask)
			if skip > w-pos {
				return n, 0, s.fail("record.length", fileOff, corruptf(nil, "padding to the ring end passes write_cursor %d", w))
			}
			pos += skip
			s.rpos = pos
			return n, 0, nil // the chunk never extends past the ring end
		case KindMessage:
		default:
			return n, 0, s.fail("record.kind", fileOff+4, corruptf(nil, "%d at position %d", kind, pos))
		}
		if length > s.h.maxPayload {
			return n, 0, s.fail("record.length", fileOff, corruptf(nil, "%d exceeds max_payload %d", length, s.h.maxPayload))
		}
		if off > 0 && s.direct != nil && length >= s.directMin {
			break walk // a large record: the next drain step takes it straight from the mapping
		}
		size := recordSize(uint64(length))
		if size > rest {
			switch {
			case size > w-pos:
				return n, 0, s.fail("record.length", fileOff, corruptf(nil, "record of %d bytes at %d passes write_cursor %d", size, pos, w))
			case atRingEnd:
				return n, 0, s.fail("record.length", fileOff, corruptf(nil, "record of %d bytes at %d straddles the ring end", size, pos))
			}
			if off == 0 {
				return n, size, nil // larger than the private buffer
			}
			break walk // cut by the batch size: read it with the next chunk
		}
		seq := le.Uint64(chunk[off+8:])
		if s.rebaseSeq {
			s.nextSeq, s.rebaseSeq = seq, false
		}
		if seq < s.nextSeq {
			return n, 0, s.fail("record.seq", fileOff+8, corruptf(nil, "%d after %d", seq, s.nextSeq-1))
		}
		if gap := seq - s.nextSeq; gap > 0 {
			s.lost.Add(gap)
			sink.Lost(id, now, gap) // the recorder's per-topic and per-dump accounting
		}
		s.nextSeq = seq + 1
		gen := int64(le.Uint64(chunk[off+16:]))
		payload := chunk[off+RecordHeaderSize : off+RecordHeaderSize+uint64(length)]
		if sink.IngestAt(id, now, gen, payload) {
			bytes += uint64(length)
		} else {
			rejected++
		}
		n++
		pos += size
		off += size
	}
	s.rpos = pos
	return n, 0, nil
}

// verify re-checks the immutable header bytes against the copy taken at
// open and returns a SegmentError naming the first field that changed.
func (s *segment) verify() error {
	cur := s.hdrMem[:frozenLen]
	if bytes.Equal(cur, s.frozen) {
		return nil
	}
	i := 0
	for cur[i] == s.frozen[i] {
		i++
	}
	name, start := fieldAt(i)
	return s.fail(name, int64(start), corruptf(nil, "immutable header byte %d changed from %#x to %#x while live", i, s.frozen[i], cur[i]))
}

// fieldAt names the header field holding byte offset off and returns the
// field's own offset.
func fieldAt(off int) (string, int) {
	fields := [...]struct {
		start int
		name  string
	}{
		{offMagic, "magic"}, {offVersion, "version"}, {offHeaderSize, "header_size"},
		{offTotalSize, "total_size"}, {offCapacity, "capacity"}, {offMaxPayload, "max_payload"},
		{offFlags, "flags"}, {offPID, "producer_pid"}, {offUID, "producer_uid"},
		{offStartNs, "start_ns"}, {offHeartbeatPeriod, "heartbeat_period_ns"}, {offNameLen, "name_len"},
		{offTypeLen, "type_len"}, {offChannelLen, "channel_len"}, {offEncodingLen, "encoding_len"},
		{offSchemaEncLen, "schema_encoding_len"}, {offSchemaEncLen + 2, "reserved"}, {offSchemaLen, "schema_len"},
		{offSchemaLen + 4, "reserved"}, {offName, "name"}, {offType, "type"}, {offChannel, "channel"},
		{offEncoding, "encoding"}, {offSchemaEncoding, "schema_encoding"},
	}
	for i := len(fields) - 1; i >= 0; i-- {
		if off >= fields[i].start {
			return fields[i].name, fields[i].start
		}
	}
	return "header", 0
}

// closed reports whether the producer marked the segment closed.
func (s *segment) closed() bool { return s.c.state.Load() == StateClosed }

// close unmaps the segment and closes its file.
func (s *segment) close() {
	s.owner.close()
	unmap(s.ring)
	unmap(s.hdrMem)
	s.ring, s.hdrMem = nil, nil // s.c stays: a late futexWake on it is harmless
	if s.fd >= 0 {
		closeFD(s.fd)
		s.fd = -1
	}
	runtime.KeepAlive(s)
}

func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}
