// The doorbell: one shared word per segment directory that producers ring
// to wake the consumer, so that idle segments cost the consumer goroutines
// parked on channels, not one OS thread each in FUTEX_WAIT (FORMAT.md,
// "Waking the consumer").

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	bits32 "math/bits"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Doorbell file layout (FORMAT.md, "The doorbell file").
const (
	// DoorbellName is the doorbell's file name in the segment directory
	// (a leading '.': never taken for a segment).
	DoorbellName = ".doorbell"
	// DoorbellSize is the doorbell file's size.
	DoorbellSize = 4096
	// DoorbellVersion is the version of its layout.
	DoorbellVersion = 1
	// DoorbellSlots is how many sleeping segments the doorbell's hint
	// bitmap tells apart (a consumer follows more on polling or the
	// write-cursor futex).
	DoorbellSlots = 16384

	offBellMagic   = 0
	offBellVersion = 8
	offBellSlots   = 12
	offBellRings   = 64   // u32 futex word: producers add 1, then FUTEX_WAKE
	offBellHints   = 2048 // DoorbellSlots bits, u32 words: producers set the bit of the slot they wake
)

// Segment header fields of the doorbell, in bytes version 1 reserved as
// padding: old consumers and producers ignore them.
const (
	// offWakeCaps (producer slow line, u32): WakeDoorbell when the
	// producer rings the doorbell whose inode is at offDoorbellIno.
	offWakeCaps    = StateLine + 12
	offDoorbellIno = StateLine + 16
	// offBellSlot (consumer line, u32): the hint bit the consumer
	// listens for, written before waiters is set to WaitDoorbell.
	offBellSlot = ConsumerLine + 4

	// WakeDoorbell is the wake_caps bit of a producer that rings.
	WakeDoorbell = 1

	// Values of waiters: a consumer asleep on write_cursor (any
	// non-zero value an old producer sees), or on the doorbell.
	WaitCursor   = 1
	WaitDoorbell = 2
)

func le32(b []byte) uint32       { return binary.LittleEndian.Uint32(b) }
func le32put(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

// DoorbellMagic opens the doorbell file.
var DoorbellMagic = [8]byte{'E', 'D', 'R', 'B', 'E', 'L', 'L', 1}

// ErrBadDoorbell: the directory's doorbell file is not one (wrong size,
// magic, owner); the consumer then wakes on each segment's write cursor.
var ErrBadDoorbell = errors.New("shm: bad doorbell file")

// initDoorbell writes the fixed part of a new doorbell file into b.
func initDoorbell(b []byte) {
	copy(b[offBellMagic:], DoorbellMagic[:])
	le32put(b[offBellVersion:], DoorbellVersion)
	le32put(b[offBellSlots:], DoorbellSlots)
}

// checkDoorbell checks the fixed part of a mapped doorbell file.
func checkDoorbell(b []byte) error {
	switch {
	case len(b) != DoorbellSize:
		return fmt.Errorf("%w: %d bytes, want %d", ErrBadDoorbell, len(b), DoorbellSize)
	case [8]byte(b[:8]) != DoorbellMagic:
		return fmt.Errorf("%w: magic %q", ErrBadDoorbell, b[:8])
	case le32(b[offBellVersion:]) != DoorbellVersion || le32(b[offBellSlots:]) != DoorbellSlots:
		return fmt.Errorf("%w: version %d with %d slots, want %d with %d", ErrBadDoorbell,
			le32(b[offBellVersion:]), le32(b[offBellSlots:]), DoorbellVersion, DoorbellSlots)
	}
	return nil
}

// kickPause bounds how long the doorbell's goroutine waits for a reader it
// woke to run (and ack) before it blocks in FUTEX_WAIT again.
const kickPause = time.Millisecond

// bell is the consumer's end of the doorbell: one goroutine sleeps on the
// rings word (one OS thread in FUTEX_WAIT for the whole directory), and on
// every ring kicks the followers whose hint bits are set. Safe for
// concurrent use.
type bell struct {
	mem   []byte
	ino   uint64
	lock  int // the descriptor holding the doorbell's flock (lockDoorbell)
	rings *atomic.Uint32
	hints []atomic.Uint32

	mu    sync.Mutex
	slots []*follower // by slot; nil: free
	free  []uint32
	next  uint32 // slots below next have been handed out once

	stop    chan struct{}
	done    chan struct{}
	ack     chan struct{} // a reader woken by the bell runs
	once    sync.Once
	started atomic.Bool
}

func newBell(mem []byte, ino uint64) *bell {
	b := &bell{mem: mem, ino: ino, lock: -1, stop: make(chan struct{}), done: make(chan struct{}), ack: make(chan struct{}, 1)}
	b.rings, b.hints = mapBell(mem)
	b.slots = make([]*follower, DoorbellSlots)
	return b
}

// acquire gives f a slot; false when every slot is taken.
func (b *bell) acquire(f *follower) (uint32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s uint32
	switch {
	case len(b.free) > 0:
		s, b.free = b.free[len(b.free)-1], b.free[:len(b.free)-1]
	case b.next < DoorbellSlots:
		s = b.next
		b.next++
	default:
		return 0, false
	}
	b.slots[s] = f
	return s, true
}

func (b *bell) release(s uint32) {
	b.mu.Lock()
	b.slots[s] = nil
	b.free = append(b.free, s)
	b.mu.Unlock()
}

// run sleeps on the rings word (at most wait at a time, so that stop is
// noticed without a ring) and kicks the followers whose bits are set. A
// ring with no bit (a hostile or confused producer) costs one pass over
// the bitmap (512 words).
func (b *bell) run(wait time.Duration) {
	defer close(b.done)
	ackWait := time.NewTimer(time.Hour)
	defer ackWait.Stop()
	debug.SetPanicOnFault(true) // the file is shared: see the recover below
	defer func() {
		if r := recover(); r != nil && !isFault(r) {
			panic(r)
		}
	}()
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		seen := b.rings.Load()
		kicked := false
		select { // an ack of an earlier round
		case <-b.ack:
		default:
		}
		for i := range b.hints {
			if b.hints[i].Load() == 0 {
				continue
			}
			bits := b.hints[i].Swap(0)
			b.mu.Lock()
			for bits != 0 {
				k := uint32(i)*32 + uint32(bits32.TrailingZeros32(bits))
				bits &= bits - 1
				if f := b.slots[k]; f != nil {
					f.kickNow()
					kicked = true
				}
			}
			b.mu.Unlock()
		}
		if kicked {
			// Park until a woken reader runs (it acks), so that the
			// readers run on this P before the futex wait takes its
			// thread: a P held in a system call with goroutines queued
			// is handed over only by sysmon, up to 10 ms later. Rings
			// meanwhile are not lost: the wait returns at once when
			// rings moved past seen.
			ackWait.Reset(kickPause)
			select {
			case <-b.ack:
			case <-ackWait.C:
			case <-b.stop:
			}
		}
		futexWait(b.ringsWord(), seen, wait)
	}
}

// close stops run and unmaps the doorbell.
func (b *bell) close() {
	b.once.Do(func() {
		close(b.stop)
		if b.started.Load() {
			b.rings.Add(1)
			futexWake(b.ringsWord())
			<-b.done
		}
		unmap(b.mem)
		if b.lock >= 0 {
			closeFD(b.lock)
		}
	})
}

// openBellLocked opens (or makes) the directory's doorbell and starts the
// goroutine that answers it. A doorbell owned by a user the consumer does
// not accept segments from, or that is not one, is replaced. On failure
// the error is reported and every segment is waited on apart. c.mu is held.
func (c *Consumer) openBellLocked() {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(c.dir); err == nil && st.Mode().Perm()&0o020 != 0 {
		mode = 0o660 // producers of the directory's group ring it too
	}
	d, err := openDoorbell(c.dir, true, true, mode, 0)
	if err == nil && !c.opts.ownerAllowed(d.uid) {
		unmap(d.mem)
		d, err = replaceDoorbell(c.dir, mode)
	}
	if err != nil {
		c.reportLocked(fmt.Errorf("shm: doorbell of %s unusable, idle segments are waited on one by one: %w", c.dir, err))
		return
	}
	// One consumer answers a directory's doorbell: another one already
	// does (a node under test beside the closed loop's collector), so this
	// one waits on each segment apart, as without a doorbell.
	fd, ok, err := lockDoorbell(c.dir, d.ino)
	if !ok {
		unmap(d.mem)
		if err != nil {
			c.reportLocked(fmt.Errorf("shm: doorbell of %s unusable, idle segments are waited on one by one: %w", c.dir, err))
		}
		return
	}
	c.bell = newBell(d.mem, d.ino)
	c.bell.lock = fd
	c.bell.started.Store(true) // before the goroutine: close waits for it
	go c.bell.run(time.Second)
}
