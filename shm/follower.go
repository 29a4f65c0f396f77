// The follower: one goroutine following one segment file name — opening
// and mapping it, reading its records into the sink, quarantining it when
// it fails a check, checking its liveness (removed, replaced, closed,
// producer dead, heartbeat stale) while following, and waiting (futex or
// polling) when it is idle.

package shm

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// startLocked starts a follower for name; c.mu is held.
func (c *Consumer) startLocked(name string) {
	f := &follower{c: c, name: name, path: filepath.Join(c.dir, name), kick: make(chan struct{}, 1), spin: spinSlow,
		slept: sweepLeave} // idle (not swept, not on the write cursor) until a short sleep says otherwise
	c.followers[name] = f
	c.wg.Add(1)
	go f.run()
}

// follower follows one segment file name for as long as it exists.
type follower struct {
	c     *Consumer
	name  string
	path  string
	kick  chan struct{}
	cur   atomic.Pointer[segment]
	state atomic.Pointer[SegmentStats] // topic, online, err for Stats

	changed   atomic.Bool
	mu        sync.Mutex   // guards cur changes against stats
	done      SegmentStats // counters of segments released so far
	seg       *segment
	id        ingest.TopicID
	recording bool
	online    bool
	badID     fileID // file identity that failed to open
	bad       bool
	lastID    fileID // the file last opened (or refused)
	spin      int    // polls before sleeping, see wait
	finished  bool   // the producer closed or died and its segment was read
	timer     *time.Timer

	slot    uint32 // doorbell hint bit, when hasSlot
	hasSlot bool

	// Sweeping (sweep.go): inSweep and sweepIdle are the sweeper's, under
	// its lock; sweepQuiet and sweepErr are set by the sweeper when it
	// hands the segment back, read by the follower after sweeper.remove.
	inSweep    bool
	sweepIdle  int
	sweepQuiet bool
	sweepErr   error
	slept      time.Duration // how long the last sleep lasted (see wait)
	// silentOff: the topic is offline because its producer went silent
	// (it comes back at the next sign of life).
	silentOff bool
	// Last signs of life on the consumer's clock: the write cursor and the
	// heartbeat as last seen, and when either last changed.
	lifeW  uint64
	lifeHb int64
	lifeNs int64
}

func (f *follower) stats() SegmentStats {
	var s SegmentStats
	if p := f.state.Load(); p != nil {
		s = *p
	}
	s.Path = f.path
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Messages, s.Bytes, s.Lost, s.Rejected = f.done.Messages, f.done.Bytes, f.done.Lost, f.done.Rejected
	if seg := f.cur.Load(); seg != nil {
		s.Messages += seg.received.Load()
		s.Bytes += seg.bytes.Load()
		s.Lost += seg.lost.Load()
		s.Rejected += seg.rejected.Load()
	}
	return s
}

func (f *follower) publishState(err error) {
	s := &SegmentStats{Online: f.online, Recording: f.recording, Err: err}
	if f.seg != nil {
		s.Topic = f.seg.info
		if f.seg.typeErr != nil {
			s.TypeErr = f.seg.typeErr
		}
	}
	f.state.Store(s)
}

// kickNow ends the follower's current (or next) sleep on its channel.
func (f *follower) kickNow() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// wake interrupts the follower's wait.
func (f *follower) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
	if s := f.cur.Load(); s != nil {
		futexWake(s.c.futex)
	}
}

func (f *follower) run() {
	c := f.c
	defer c.wg.Done()
	debug.SetPanicOnFault(true) // see follow
	f.timer = time.NewTimer(time.Hour)
	defer f.timer.Stop()
	for !c.stop.Load() {
		if f.seg == nil {
			if f.finished || !f.open() {
				break
			}
			if f.seg == nil {
				f.sleep(c.opts.CheckInterval)
				continue
			}
		}
		f.follow()
	}
	if f.seg != nil {
		func() {
			defer func() {
				if r := recover(); r != nil && !isFault(r) {
					panic(r)
				}
			}()
			f.finalDrain()
		}()
		f.release()
	}
	if f.hasSlot {
		c.bell.release(f.slot)
		f.hasSlot = false
	}
	c.mu.Lock()
	delete(c.followers, f.name)
	if f.finished && c.opts.KeepFiles {
		c.finished[f.name] = f.lastID
	}
	// A new file may have appeared while this follower was ending (its
	// inotify event only marked this follower): follow it now.
	if fi, err := lstat(f.path); err == nil && fi.id != f.lastID && !c.stop.Load() {
		c.startLocked(f.name)
	}
	c.followRefusedLocked()
	st := f.stats()
	c.retired.Messages += st.Messages
	c.retired.Bytes += st.Bytes
	c.retired.Lost += st.Lost
	c.retired.Rejected += st.Rejected
	c.mu.Unlock()
}

// open maps the file; it returns false when the file no longer exists. A
// file that fails its checks is quarantined until it is replaced.
func (f *follower) open() (exists bool) {
	fi, err := lstat(f.path)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	if f.bad && fi.id == f.badID {
		return true
	}
	f.lastID = fi.id
	f.changed.Store(false)
	f.c.opening <- struct{}{}
	s, err := openSegment(f.path, &f.c.opts, &f.c.big, &f.c.pids)
	if err == nil && f.isLeftover(s) {
		<-f.c.opening
		f.bad = false
		f.lastID = s.id
		f.readLeftover(s)
		return false
	}
	<-f.c.opening
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		f.quarantine(fi.id, err)
		return true
	}
	f.bad = false
	f.lastID = s.id
	if m, ok := f.c.startAt[f.name]; ok && m.id == s.id {
		// SkipExisting: start where the segment stood at Start; the first
		// record read sets the expected sequence (the skipped ones are not
		// losses).
		s.rpos = max(s.rpos, m.w)
		s.rebaseSeq = true
	}
	s.direct, s.batcher = f.c.direct, f.c.batch
	f.seg = s
	f.cur.Store(s)
	if s.typeErr != nil {
		f.c.report(s.typeErr) // recorded all the same, as raw bytes
	}
	f.lifeW, f.lifeHb, f.lifeNs, f.silentOff = s.c.write.Load(), s.c.hbNs.Load(), f.c.opts.Clock.Now(), false
	id, err := f.c.sink.Discover(s.info)
	f.recording, f.online = err == nil, err == nil
	if err != nil {
		f.c.report(fmt.Errorf("shm: segment %s: topic %q not recorded: %w", f.path, s.info.Name, err))
	}
	f.id = id
	f.publishState(nil)
	return true
}

func (f *follower) quarantine(id fileID, err error) {
	f.bad, f.badID = true, id
	f.c.report(err)
	if f.seg != nil {
		// The quarantine is visible in Stats before the sink hears the
		// topic went offline.
		wasOnline := f.online
		f.online = false
		f.publishState(err)
		if wasOnline {
			f.c.sink.Offline(f.id)
		}
		f.release()
		return
	}
	f.publishState(err)
}

func (f *follower) release() {
	f.mu.Lock()
	s := f.seg
	f.done.Messages += s.received.Load()
	f.done.Bytes += s.bytes.Load()
	f.done.Lost += s.lost.Load()
	f.done.Rejected += s.rejected.Load()
	f.cur.Store(nil)
	f.mu.Unlock()
	f.seg.close()
	f.seg = nil
}

// drain reads what is there (only skipping it when the topic is not
// recorded).
func (f *follower) drain(budget int) (n int, done bool, err error) {
	s := f.seg
	if !f.recording {
		w, _, err := s.cursors()
		s.rpos = w
		return 0, true, err
	}
	return s.drain(f.c.sink, f.id, budget)
}

// finalDrain reads every record still there, once.
func (f *follower) finalDrain() {
	for range 1 << 16 {
		_, done, err := f.drain(64)
		if err != nil || done {
			return
		}
	}
}

const drainBudget = 16

// follow reads the current segment until it ends (closed, dead, replaced,
// quarantined) or the consumer stops.
//
// A fault on the mapping (the file was truncated under us) is recovered
// and quarantines the segment: run sets debug.SetPanicOnFault.
func (f *follower) follow() {
	c, s := f.c, f.seg
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			f.quarantine(s.id, s.fail("file", 0, corruptf(ErrTruncated, "fault on the mapping (file truncated while mapped?): %v", r)))
		}
	}()
	interval := c.opts.CheckInterval
	if limit := f.silence(s); limit > 0 && limit/2 < interval {
		interval = max(limit/2, time.Millisecond)
	}
	next := time.Now().Add(interval)
	idle := 0
	for !c.stop.Load() {
		if f.silentOff && s.c.write.Load() != f.lifeW {
			f.revive(s) // a record from a silent producer: online before it is read
		}
		n, done, err := f.drain(drainBudget)
		if err != nil {
			f.quarantine(s.id, err)
			return
		}
		if n > 0 || !done {
			idle = 0
			if !done { // busy: still look at liveness now and then
				if now := time.Now(); now.After(next) {
					if !f.check() {
						return
					}
					next = now.Add(interval)
				}
			}
			continue
		}
		now := time.Now()
		if !now.Before(next) || f.changed.Load() || s.closed() {
			if !f.check() {
				return
			}
			next = now.Add(interval)
			continue
		}
		f.wait(next.Sub(now), idle)
		if err := f.sweepErr; err != nil { // the sweeper's read failed
			f.sweepErr = nil
			f.quarantine(s.id, err)
			return
		}
		idle++
	}
}

// check looks at the segment's integrity and liveness; false means the
// follower must stop following this mapping.
func (f *follower) check() bool {
	c, s := f.c, f.seg
	if err := s.verify(); err != nil {
		f.quarantine(s.id, err)
		return false
	}
	if f.changed.Swap(false) || c.notify == nil {
		if fi, err := lstat(f.path); err != nil || fi.id != s.id {
			// Removed or replaced: read what is left, then reopen.
			f.finalDrain()
			if f.online && err != nil {
				c.sink.Offline(f.id)
				f.online = false
			}
			f.release()
			return false
		}
	}
	if f.producerDone(s) {
		f.finalDrain()
		if f.online {
			c.sink.Offline(f.id)
			f.online = false
		}
		f.publishState(nil)
		if !c.opts.KeepFiles {
			if h := testHookBeforeReap; h != nil {
				h(f.path)
			}
			if err := removeIfID(f.path, s.id); err != nil {
				c.report(err)
			}
		}
		f.finished = true
		f.release()
		return false
	}
	// Silent producers (no heartbeat, no record for too long) are offline
	// until they give a sign of life; liveness by pid alone never goes
	// silent.
	if limit := f.silence(s); limit > 0 && f.recording {
		silent := f.silent(s, limit)
		switch {
		case silent && f.online:
			c.sink.Offline(f.id)
			f.online, f.silentOff = false, true
			f.publishState(nil)
		case !silent && f.silentOff:
			f.revive(s)
		}
	}
	return true
}

// Spinning before a futex sleep. A producer pays a FUTEX_WAKE system call
// (microseconds) for each publish that finds the consumer asleep; a fast
// producer and a consumer that keeps catching up and falling asleep can lock
// into one wake per message. So when a sleep ends within fastWake, the
// stream is fast: the follower polls (yielding) up to spinFast times before
// its next sleep, and goes back to spinSlow after a long sleep.
const (
	spinSlow = 2
	spinFast = 256
	fastWake = 100 * time.Microsecond
)

// wait sleeps until new records may be there, at most d. A producer that
// rings the doorbell wakes the follower through it (the follower parks on
// its channel: no OS thread); one that does not is waited on in FUTEX_WAIT
// on its write cursor while a token of MaxFutexSleepers is free (one OS
// thread each), and polled with a back-off otherwise.
func (f *follower) wait(d time.Duration, idle int) {
	s := f.seg
	if f.c.sweep != nil && f.slept < sweepJoin {
		f.sweepWait(d) // a busy stream: read with the others every Sweep
		return
	}
	if idle < f.spin {
		runtime.Gosched()
		return
	}
	if f.c.opts.Wait == WaitFutex && s.c.waiters != nil {
		// A busy stream (its last sleep was short) is waited on in
		// FUTEX_WAIT on its own write cursor while a token is free: the
		// producer then wakes this very thread (microseconds), where the
		// doorbell adds a hand-off between two goroutines (tens).
		if f.slept < activeSleep && f.futexWait(s, d) {
			return
		}
		if f.useBell(s) {
			s.c.bellSlot.Store(f.slot)
			s.c.waiters.Or(WaitDoorbell) // a bit (another consumer may sleep too); seq-cst, before the re-load (Dekker, as below)
			if w := s.c.write.Load(); w != s.lastW || f.c.stop.Load() || f.changed.Load() {
				return
			}
			t0 := time.Now()
			f.sleep(d)
			f.adaptSpin(time.Since(t0))
			return
		}
		if f.futexWait(s, d) {
			return
		}
	}
	step := f.c.opts.PollMin << min(max(idle-f.spin, 0), 16)
	f.sleep(min(step, f.c.opts.PollMax, d))
}

// activeSleep: a follower whose last sleep was shorter follows a busy
// stream (see wait).
const activeSleep = 10 * time.Millisecond

// futexWait sleeps in FUTEX_WAIT on the write cursor of s, at most d, when
// one of the consumer's MaxFutexSleepers tokens is free (one OS thread
// each); false when none is.
func (f *follower) futexWait(s *segment, d time.Duration) bool {
	select {
	case f.c.sleeper <- struct{}{}:
	default:
		return false
	}
	s.c.waiters.Or(WaitCursor)
	w := s.c.write.Load()
	if w == s.lastW && !f.c.stop.Load() && !f.changed.Load() {
		t0 := time.Now()
		futexWait(s.c.futex, uint32(w), d)
		f.adaptSpin(time.Since(t0))
	}
	<-f.c.sleeper
	return true
}

// useBell reports whether the producer of s rings the doorbell the consumer
// listens to, taking a hint slot for the follower on first use.
func (f *follower) useBell(s *segment) bool {
	b := f.c.bell
	if b == nil || s.c.wakeCaps.Load()&WakeDoorbell == 0 || s.c.bellIno.Load() != b.ino {
		return false
	}
	if !f.hasSlot {
		f.slot, f.hasSlot = b.acquire(f)
	}
	return f.hasSlot
}

// adaptSpin picks how many polls come before the next sleep from how
// long this one lasted.
func (f *follower) adaptSpin(slept time.Duration) {
	f.slept = slept
	if slept < fastWake {
		f.spin = spinFast
	} else {
		f.spin = spinSlow
	}
}

func (f *follower) sleep(d time.Duration) {
	f.timer.Reset(d)
	select {
	case <-f.timer.C:
	case <-f.kick:
		if b := f.c.bell; b != nil {
			select { // the doorbell's goroutine waits for a woken reader to run
			case b.ack <- struct{}{}:
			default:
			}
		}
	case <-f.c.stopCh:
	}
}
