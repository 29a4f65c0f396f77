package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

// DefaultDir is the segment directory producers and the recorder agree on
// unless configured otherwise.
const DefaultDir = "/dev/shm/edr"

// DefaultCapacity is the ring size of a producer that does not choose one.
const DefaultCapacity = 1 << 20

// tailSlack: when the producer must overwrite, it frees capacity/tailSlack
// bytes more than it needs, so the tail (and its fence) moves once per
// capacity/tailSlack bytes rather than on every publish.
const tailSlack = 16

// ProducerOptions configure a segment. Name is required.
type ProducerOptions struct {
	// Name and Channel identify the topic (see ingest.TopicInfo). Name is
	// 1..256 bytes, Channel 0..64; UTF-8 without control characters.
	Name, Channel string

	// Type says what the payloads are, once for the segment: a message
	// encoding and a schema (ingest.Type; ingest.Packed for a packed
	// struct), written into the segment's schema area (a version 2
	// segment; FORMAT.md). The schema name is 0..128 bytes, the encodings
	// at most 64, the schema at most MaxSchemaSize. The zero Type declares
	// nothing, and a Type with only Schema.Name a type name: both write a
	// version 1 segment, which recorders older than types read too.
	Type ingest.Type

	// Capacity is the ring size in bytes, rounded up to a power of two in
	// [MinCapacity, MaxCapacity]; DefaultCapacity when 0.
	Capacity int

	// MaxPayload is the largest payload Publish accepts; when 0 it is the
	// largest the ring allows (Capacity/2 - RecordHeaderSize).
	MaxPayload int

	// Mode is the segment file's permission bits (the umask is not
	// applied); 0600 when 0.
	Mode os.FileMode

	// Group, when > 0, is the gid the segment file is given (so that a
	// recorder in that group may read it).
	Group int

	// HeartbeatPeriod promises a Heartbeat call at least this often; the
	// consumer treats a heartbeat older than two periods as a dead
	// producer. 0 promises none (liveness is then judged by pid only).
	HeartbeatPeriod time.Duration

	// UnlinkOnClose removes the file in Close. By default the file stays,
	// marked closed, and the consumer removes it once it has read it all.
	UnlinkOnClose bool

	// NoPrefault skips touching every ring page at creation. Prefaulting
	// (the default) keeps first-lap page faults out of Publish.
	NoPrefault bool

	// Clock stamps start and heartbeat times; the system clock when nil.
	Clock clock.Clock
}

// Producer publishes one topic's messages into a shared-memory segment. It
// never blocks and never waits for a consumer: when the consumer lags, the
// oldest records are overwritten (the consumer counts them as lost).
//
// Publish, Reserve, Commit, Stats and Close must be called from one
// goroutine at a time; Heartbeat may also be called concurrently with
// Publish.
type Producer struct {
	path   string
	fd     int
	mem    []byte
	hdr    []byte
	ring   []byte
	c      cursors
	mask   uint64
	capa   uint64
	maxPay int
	w      uint64 // local copies of the cursors (single writer)
	tail   uint64
	seq    uint64
	id     fileID
	unlink bool
	clk    clock.Clock
	closed bool

	// The reservation (Reserve, Commit): its padding before the record
	// and its payload bytes.
	reserved bool
	resPad   uint64
	resLen   int

	// cps[g%tailSlack] is where the first record starting in segment g
	// (capa/tailSlack bytes) of the ring begins, this lap's or an older
	// one's (the position says which), so makeRoom moves the tail to a
	// record boundary without reading the old records' headers (a cache
	// miss each, a lap after they were written).
	cps    [tailSlack]uint64
	cpSeg  uint64 // segment of the newest record's start
	cpBits uint   // log2 of the segment size

	bell      []byte // the directory's doorbell, nil when it could not be opened
	bellRings *atomic.Uint32
	bellHints []atomic.Uint32
}

// NewProducer creates the segment for opts.Name/opts.Channel in dir
// (created when missing with the segment mode plus search permission for
// whoever may read: 0700 for 0600 segments, 0750 for 0640, 0770 for 0660). An existing segment for the same
// topic is replaced when its producer closed it or is gone; ErrInUse is
// returned when its producer is alive.
func NewProducer(dir string, opts ProducerOptions) (*Producer, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	if err := checkTopic(opts.Name, opts.Type.Schema.Name, opts.Channel); err != nil {
		return nil, err
	}
	version, err := checkType(opts.Type)
	if err != nil {
		return nil, err
	}
	hdrSize := uint64(HeaderSize)
	if version >= Version {
		hdrSize += schemaArea(uint64(len(opts.Type.Schema.Data)))
	}
	capa, err := roundCapacity(opts.Capacity)
	if err != nil {
		return nil, err
	}
	maxPay := opts.MaxPayload
	switch {
	case maxPay == 0:
		maxPay = maxPayloadFor(capa)
	case maxPay < 0 || maxPay > maxPayloadFor(capa):
		return nil, fmt.Errorf("%w: MaxPayload %d not in [1, %d] for capacity %d", ErrBadOption, maxPay, maxPayloadFor(capa), capa)
	}
	mode := opts.Mode
	if mode == 0 {
		mode = 0o600
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.System{}
	}
	if err := os.MkdirAll(dir, dirMode(mode)); err != nil {
		return nil, fmt.Errorf("shm: segment directory: %w", err)
	}
	base := SegmentFileName(opts.Name, opts.Channel)
	final := filepath.Join(dir, base)
	if err := checkReplaceable(final, clk.Now()); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "."+base+"."+strconv.Itoa(os.Getpid())+".tmp")
	fd, err := createSegmentFile(tmp, mode, opts.Group)
	if errors.Is(err, fs.ErrExist) { // left over by a crashed create of ours
		os.Remove(tmp)
		fd, err = createSegmentFile(tmp, mode, opts.Group)
	}
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	p := &Producer{path: final, fd: fd, capa: capa, mask: capa - 1, maxPay: maxPay, unlink: opts.UnlinkOnClose, clk: clk,
		cpSeg: ^uint64(0), cpBits: uint(bits.TrailingZeros64(capa / tailSlack))}
	for i := range p.cps {
		p.cps[i] = noRecord
	}
	fail := func(err error) (*Producer, error) {
		return nil, errors.Join(err, p.release(), os.Remove(tmp))
	}
	total := int64(hdrSize + capa)
	if err := truncateFile(fd, total); err != nil {
		return fail(fmt.Errorf("shm: size %s: %w", tmp, err))
	}
	if p.mem, err = mapFile(fd, 0, int(total), true); err != nil {
		return fail(fmt.Errorf("shm: map %s: %w", tmp, err))
	}
	p.hdr, p.ring = p.mem[:HeaderSize], p.mem[hdrSize:]
	copy(p.mem[HeaderSize:hdrSize], opts.Type.Schema.Data) // v2: the schema area
	encodeHeader(p.hdr, &header{
		version:         version,
		headerSize:      hdrSize,
		enc:             opts.Type.MessageEncoding,
		schemaEnc:       opts.Type.Schema.Encoding,
		schemaLen:       uint32(len(opts.Type.Schema.Data)),
		totalSize:       uint64(total),
		capacity:        capa,
		maxPayload:      uint32(maxPay),
		pid:             getpid(),
		uid:             geteuid(),
		startNs:         clk.Now(),
		heartbeatPeriod: int64(opts.HeartbeatPeriod),
		name:            opts.Name,
		typ:             opts.Type.Schema.Name,
		chn:             opts.Channel,
	})
	p.c = mapCursors(p.hdr, true)
	if !opts.NoPrefault {
		clear(p.ring) // allocates the tmpfs pages now, not in Publish
	}
	if fi, err := fstat(fd); err == nil {
		p.id = fi.id
	}
	// The doorbell (created when missing): without it the consumer wakes
	// on this segment's write cursor, as with producers older than it.
	if d, err := openDoorbell(dir, true, false, mode, opts.Group); err == nil {
		p.bell = d.mem
		p.bellRings, p.bellHints = mapBell(d.mem)
		p.c.bellIno.Store(d.ino)
		p.c.wakeCaps.Store(WakeDoorbell)
	}
	// The mapping is all a producer needs: one descriptor less per topic.
	closeFD(fd)
	p.fd = -1
	if err := os.Rename(tmp, final); err != nil {
		return fail(fmt.Errorf("shm: publish segment: %w", err))
	}
	return p, nil
}

func roundCapacity(n int) (uint64, error) {
	if n == 0 {
		return DefaultCapacity, nil
	}
	if n < 0 || n > MaxCapacity {
		return 0, fmt.Errorf("%w: Capacity %d not in [0, %d]", ErrBadOption, n, MaxCapacity)
	}
	c := uint64(MinCapacity)
	for c < uint64(n) {
		c <<= 1
	}
	return c, nil
}

// checkReplaceable refuses to replace the segment at path when its producer
// still holds it (segmentInUse). Anything unreadable there is replaced.
func checkReplaceable(path string, now int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var b [HeaderSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil || [8]byte(b[:8]) != Magic {
		return nil
	}
	le := binary.LittleEndian
	pid := le.Uint32(b[offPID:])
	if segmentInUse(le.Uint32(b[offState:]), pid, int64(le.Uint64(b[offStartNs:])),
		int64(le.Uint64(b[offHeartbeatPeriod:])), int64(le.Uint64(b[offHeartbeatNs:])), now) {
		return fmt.Errorf("%w: %s (pid %d)", ErrInUse, path, pid)
	}
	return nil
}

// segmentInUse reports whether a segment's producer still holds it, so a
// new producer for the topic must not replace it: the segment is live,
// its pid (when usable: usablePID) still names its producer, and, when the
// producer promised heartbeats, its last one is at most two periods old at
// now. A segment whose pid cannot be checked (0, 1, beyond PID_MAX_LIMIT)
// is held only by fresh heartbeats: pid 0, 1 or -1 never holds a topic
// forever.
func segmentInUse(state, pid uint32, startNs, period, hbNs, now int64) bool {
	if state != StateLive || (usablePID(pid) && ownerGone(pid, startNs)) {
		return false
	}
	if period > 0 {
		return now-hbNs <= 2*period
	}
	return usablePID(pid)
}

// Path is the segment file's path.
func (p *Producer) Path() string { return p.path }

// Publish appends one message with producer time genNs (0 = unknown). It
// copies payload, never blocks and never allocates. It returns ErrTooLarge
// (counted in the segment's oversize counter) for a payload longer than
// MaxPayload and ErrClosed after Close. Publish is Reserve, a copy and
// Commit.
func (p *Producer) Publish(genNs int64, payload []byte) error {
	at, err := p.reserve(len(payload))
	if err != nil {
		return err
	}
	copy(p.ring[at:], payload)
	p.commit(genNs, len(payload))
	return nil
}

// Reserve lends the producer the ring bytes of its next message, up to n
// bytes, so that it can write the message in place (a camera frame
// decoded or a struct serialized straight into the segment) instead of
// writing it elsewhere and copying it in with Publish. Write the payload
// into the returned slice, then Commit it; nothing of it is visible to
// the consumer before Commit. A reservation not committed is dropped by
// the next Reserve or Publish, but the room it made stays made: the
// oldest records may already have been overwritten (the consumer counts
// them as lost, as when Publish makes room). The slice must not be used
// after Commit, the next Reserve or Publish, or Close.
//
// Reserve never blocks and never allocates. It returns ErrTooLarge
// (counted in the segment's oversize counter) for n > MaxPayload and
// ErrClosed after Close.
func (p *Producer) Reserve(n int) ([]byte, error) {
	at, err := p.reserve(n)
	if err != nil {
		return nil, err
	}
	return p.ring[at : at+uint64(n) : at+uint64(n)], nil
}

// reserve is Reserve returning the ring offset of the payload.
func (p *Producer) reserve(n int) (uint64, error) {
	p.reserved = false
	if p.closed {
		return 0, ErrClosed
	}
	if n < 0 || n > p.maxPay {
		p.c.oversize.Store(p.c.oversize.Load() + 1)
		return 0, ErrTooLarge
	}
	rec := recordSize(uint64(n))
	w := p.w
	off := w & p.mask
	pad := uint64(0)
	if room := p.capa - off; rec > room {
		pad = room
	}
	end := w + pad + rec
	if end-p.tail > p.capa {
		p.makeRoom(w, pad, end)
	}
	p.reserved, p.resPad, p.resLen = true, pad, n
	return (w+pad)&p.mask + RecordHeaderSize, nil
}

// Commit publishes the reserved message with producer time genNs (0 =
// unknown) and its first n bytes as the payload; n may be less than
// Reserve's (a message whose size is known only once written). It returns
// ErrNoReservation without a reservation to commit (none, or already
// committed) or for n beyond it, and ErrClosed after Close.
func (p *Producer) Commit(genNs int64, n int) error {
	if p.closed {
		return ErrClosed
	}
	if !p.reserved || n < 0 || n > p.resLen {
		return ErrNoReservation
	}
	p.commit(genNs, n)
	return nil
}

// makeRoom moves the tail past every record the record ending at end
// (after pad bytes of padding at w) will cover, to the first record that
// starts in a later segment (capacity/tailSlack bytes) and not past the new
// record, so that this happens about once per segment; it publishes the
// new tail with a full fence before those bytes are touched. It reads no
// record of the ring: where each segment's first record starts is
// remembered as it is written (cps), so a lap-old header is never loaded
// (a cache miss per record) and bytes someone else wrote into the ring
// cannot steer the tail.
func (p *Producer) makeRoom(w, pad, end uint64) {
	first := w + pad               // where the new record starts
	need := min(end-p.capa, first) // the tail must reach at least this
	t := first                     // nothing valid before the new record: everything goes
	for g := need >> p.cpBits; g<<p.cpBits < first; g++ {
		if cp := p.cps[g%tailSlack]; cp>>p.cpBits == g && cp >= need && cp < first {
			t = cp
			break
		}
	}
	p.tail = t
	p.c.tail.Swap(t)
}

// noRecord marks a segment in which no record started yet (Producer.cps).
const noRecord = ^uint64(0)

// commit is Commit of a reservation known to hold n bytes.
func (p *Producer) commit(genNs int64, n int) {
	p.reserved = false
	off := p.w & p.mask
	if p.resPad > 0 {
		binary.LittleEndian.PutUint32(p.ring[off:], uint32(p.resPad))
		binary.LittleEndian.PutUint32(p.ring[off+4:], KindPadding)
		off = 0
	}
	if start := p.w + p.resPad; start>>p.cpBits != p.cpSeg {
		p.cpSeg = start >> p.cpBits
		p.cps[p.cpSeg%tailSlack] = start // the first record starting in this segment
	}
	r := p.ring[off : off+RecordHeaderSize]
	binary.LittleEndian.PutUint32(r[0:], uint32(n))
	binary.LittleEndian.PutUint32(r[4:], KindMessage)
	binary.LittleEndian.PutUint64(r[8:], p.seq)
	binary.LittleEndian.PutUint64(r[16:], uint64(genNs))
	end := p.w + p.resPad + recordSize(uint64(n))
	p.seq++
	p.w = end
	// next_seq is for monitoring only: a plain store, no ordering needed.
	binary.LittleEndian.PutUint64(p.hdr[offNextSeq:], p.seq)
	p.c.write.Store(end) // seq-cst: ordered before the waiters load (Dekker)
	if p.c.waiters.Load() != 0 {
		p.wake(p.c.waiters.Swap(0))
	}
}

// wake wakes the consumers that were asleep as the bits of w say: on the
// doorbell (the hint bit it asked for, then a ring), on the write cursor,
// or both (two consumers of one segment).
func (p *Producer) wake(w uint32) {
	if w == 0 {
		return
	}
	rang := false
	if w&WaitDoorbell != 0 && p.bell != nil {
		if s := p.c.bellSlot.Load(); s < DoorbellSlots {
			p.bellHints[s/32].Or(1 << (s % 32))
		}
		p.bellRings.Add(1)
		futexWake(futexWord(p.bellRings))
		rang = true
	}
	if w&^WaitDoorbell != 0 || !rang {
		futexWake(p.c.futex)
	}
}

// Heartbeat stamps the segment's heartbeat time. It may be called
// concurrently with Publish (not with Close); a no-op after Close.
func (p *Producer) Heartbeat() {
	if hb := p.c.hbNs; hb != nil && !p.closed {
		hb.Store(p.clk.Now())
	}
}

// ProducerStats are a producer's counters.
type ProducerStats struct {
	Published uint64 // messages published
	Bytes     uint64 // ring bytes written (records and padding)
	Oversize  uint64 // payloads refused by Publish as too large
}

// Stats returns the producer's counters. Call it from the publishing
// goroutine (or when it is idle).
func (p *Producer) Stats() ProducerStats {
	if p.closed {
		return ProducerStats{Published: p.seq, Bytes: p.w}
	}
	return ProducerStats{Published: p.seq, Bytes: p.w, Oversize: p.c.oversize.Load()}
}

// Close marks the segment closed, wakes sleeping consumers and unmaps it.
// The file stays for the consumer to drain and remove, unless the producer
// was created with UnlinkOnClose. Close is idempotent.
func (p *Producer) Close() error {
	if p.closed {
		return nil
	}
	p.c.state.Store(StateClosed)
	p.wake(p.c.waiters.Swap(0))
	futexWake(p.c.futex) // a consumer older than the doorbell may sleep there
	p.closed = true
	var err error
	if p.unlink {
		// Only remove the file if it is still ours (not replaced).
		err = removeIfID(p.path, p.id)
	}
	return errors.Join(err, p.release())
}

func (p *Producer) release() error {
	err := unmap(p.mem)
	p.mem, p.hdr, p.ring = nil, nil, nil
	p.c = cursors{}
	if p.bell != nil {
		unmap(p.bell)
		p.bell, p.bellRings, p.bellHints = nil, nil, nil
	}
	if p.fd >= 0 {
		err = errors.Join(err, closeFD(p.fd))
		p.fd = -1
	}
	return err
}

// dirMode is the mode of a directory holding files of mode m: m plus the
// search bit of every class that may read.
func dirMode(m os.FileMode) os.FileMode {
	m = m.Perm()
	return m | (m&0o444)>>2
}
