package pack

import (
	"runtime/debug"
	"sync"
)

// Read-ahead (ReaderOptions.ReadAhead): helper goroutines decode the frames
// after the one the caller reads (both CRCs, meta, decompression) into Frames
// of their own, in file order; ReadInto then swaps the next decoded Frame
// with the caller's, so nothing is copied and the caller's old buffers go
// back to the helpers. Each Frame owns exactly one set of buffers at a time,
// so steady state allocates nothing and the caller holding a Frame never
// stalls the helpers.
//
// Bounds: at most aheadSlotsPerWorker * ReadAhead frames are in flight, and
// what the slots and the caller's Frame hold (decompressed data, block
// tables, messages, counted as frameCost counts them) stays within half
// the reader's MaxMemory: a frame that does not fit beside what is held is
// not read ahead but decoded by ReadInto into the caller's Frame, as
// without read-ahead, reusing its buffers (so a frame near the limit is
// never held twice, e.g. when the caller rewinds to the frame it holds). A slot keeps its buffers for
// reuse only while they are small (aheadKeepMax of the limit), so a huge
// frame's buffers are never held twice.
//
// Damage: dispatching stops at the first record whose header does not
// parse (the caller's own read then reports it), and a frame a helper found
// damaged is not handed out: the pipeline is drained and its error
// returned, the position left before it, exactly as a reader without
// read-ahead does (TestReadAheadDamageSameError).

const aheadSlotsPerWorker = 4

// aheadKeepMax is the share of MaxMemory a slot's buffers may take and
// still be kept for reuse after a hand-over.
const aheadKeepMax = 16

// frameHeld is what f's buffers take, counted as frameCost counts a frame.
func frameHeld(f *Frame) int64 {
	return int64(cap(f.scratch)) + int64(cap(f.blocks))*blockCost + int64(cap(f.msgs))*messageCost
}

// dropBuffers lets f's buffers go.
func dropBuffers(f *Frame) { f.scratch, f.blocks, f.msgs = nil, nil, nil }

// aheadMinFrame is the average record size (bytes) of an indexed file
// below which ReadInto does not read ahead: replaying 200 000 frames of one
// small message each took 1.85x the CPU with a helper. A variable for the
// tests, which read ahead through small frames.
var aheadMinFrame int64 = 16 << 10

type aheadSlot struct {
	f    Frame
	off  int64 // frame offset
	rec  int64 // record length
	held int64 // decompression buffer bytes the slot holds or may allocate
	err  error
	done chan struct{} // a helper finished the slot (capacity 1)
}

type readAhead struct {
	jobs    chan *aheadSlot
	wg      sync.WaitGroup
	ring    []*aheadSlot // in flight, file order
	head, n int
	scan    int64 // offset of the next record to dispatch
	stop    bool  // the scan reached the end or a record it cannot parse
	expect  int64 // Reader.pos the pipeline continues from
	held    int64 // sum of held over every slot
	caller  int64 // what the caller's Frame holds (frameHeld)
}

func (r *Reader) startAhead(workers int) {
	k := workers * aheadSlotsPerWorker
	a := &readAhead{jobs: make(chan *aheadSlot, k), ring: make([]*aheadSlot, k), scan: r.pos, expect: r.pos}
	for i := range a.ring {
		a.ring[i] = &aheadSlot{done: make(chan struct{}, 1)}
	}
	a.wg.Add(workers)
	for i := 0; i < workers; i++ {
		go r.aheadWorker(a)
	}
	r.ahead = a
}

// aheadWorker decodes slots until the jobs channel closes. It reads r.data,
// which does not change until Close has stopped the workers.
func (r *Reader) aheadWorker(a *readAhead) {
	defer a.wg.Done()
	d := frameDecoder{path: r.path, codec: newCodecs(), id: r.id, maxMem: r.maxMem}
	defer d.codec.close()
	for s := range a.jobs {
		s.err = r.decodeAhead(&d, s)
		s.done <- struct{}{}
	}
}

// decodeAhead decodes slot s's frame on a helper goroutine, a fault on
// the mapping (the file shrank) its error.
func (r *Reader) decodeAhead(d *frameDecoder, s *aheadSlot) (err error) {
	defer guard(&err, r.path, r.data, debug.SetPanicOnFault(true))
	_, err = d.decodeFrame(r.data[s.off:r.end], s.off, &s.f, true)
	if err != nil {
		s.f.Reset(0, 0)
	}
	return err
}

// fill dispatches records from a.scan while slots and the memory bound
// allow.
func (r *Reader) fill(a *readAhead) {
	for !a.stop && a.n < len(a.ring) {
		if a.scan >= r.end {
			a.stop = true
			return
		}
		b := r.data[a.scan:r.end]
		if len(b) >= 4 && le.Uint32(b) == sectionMagic {
			_, _, rec, _, err := parseSection(b)
			if err != nil {
				a.stop = true
				return
			}
			a.scan += rec
			continue
		}
		var h frameHeader
		if _, err := parseFrameHeader(b, &h); err != nil {
			a.stop = true // a trailer, or damage: the caller's own read reports it
			return
		}
		// The messages are not counted before the helper decodes the
		// meta: a message takes at least two bytes of it.
		cost := frameCost(&h, int(h.metaLen/2), true)
		s := a.ring[(a.head+a.n)%len(a.ring)]
		need := max(s.held, cost)
		budget := r.limit() / 2
		if a.caller+a.held-s.held+need > budget {
			if a.n > 0 {
				return // wait for the frames in flight
			}
			// Nothing in flight: the buffers the slots keep for reuse
			// go; a frame that still does not fit beside the caller's
			// is left to the caller's own read.
			for _, x := range a.ring {
				a.held -= x.held
				dropBuffers(&x.f)
				x.held = 0
			}
			if a.caller+cost > budget {
				return
			}
			need = cost
		}
		a.held += need - s.held
		s.off, s.rec, s.held, s.err = a.scan, h.recLen, need, nil
		a.n++
		a.scan += h.recLen
		a.jobs <- s // never blocks: the channel holds every slot
	}
}

// pop removes the head slot once its helper is done with it.
func (a *readAhead) pop() *aheadSlot {
	s := a.ring[a.head]
	<-s.done
	a.head = (a.head + 1) % len(a.ring)
	a.n--
	return s
}

// keep accounts for the buffers slot s holds after a hand-over (the
// caller's old Frame's), dropping them when they are large or keeping them
// would pass limit.
func (a *readAhead) keep(s *aheadSlot, limit int64) {
	held := frameHeld(&s.f)
	a.held += held - s.held
	s.held = held
	if a.held > limit || held > limit/aheadKeepMax {
		a.held -= s.held
		dropBuffers(&s.f)
		s.held = 0
	}
}

// drain waits for every slot in flight and discards them; the next read
// dispatches from Reader.pos again.
func (r *Reader) drain() {
	a := r.ahead
	for a.n > 0 {
		a.keep(a.pop(), r.limit())
	}
	a.stop = false
}

// readAheadInto is ReadInto through the pipeline.
func (r *Reader) readAheadInto(f *Frame) error {
	a := r.ahead
	if a.expect != r.pos { // the reader moved (Seek*, Rewind, a meta read)
		r.drain()
		a.scan = r.pos
	}
	a.caller = frameHeld(f)
	r.fill(a)
	if a.n == 0 { // the end, a record the scan could not parse, or a frame too large to read ahead
		a.expect = -1
		return r.next(f, true)
	}
	s := a.pop()
	if err := s.err; err != nil {
		// What the caller's own read would return: the sections before the
		// frame parsed (fill stops at one that does not), the frame is
		// decoded the same way, and the position stays before it.
		a.keep(s, r.limit())
		r.drain()
		a.expect = -1 // dispatch again from wherever the caller goes next
		f.Reset(0, 0)
		return err
	}
	*f, s.f = s.f, *f
	a.keep(s, r.limit())
	r.last = s.off
	r.pos = s.off + s.rec
	a.expect = r.pos
	a.caller = frameHeld(f)
	r.fill(a)
	return nil
}

// stopAhead ends the helpers (Close).
func (r *Reader) stopAhead() {
	if r.ahead == nil {
		return
	}
	r.drain()
	close(r.ahead.jobs)
	r.ahead.wg.Wait()
	r.ahead = nil
}
