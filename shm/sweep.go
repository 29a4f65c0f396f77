// The sweeper: one goroutine that reads every busy segment each
// ConsumerOptions.Sweep, so that a recorder of many topics wakes once per
// period instead of once per message (FORMAT.md does not change: producers
// see a consumer that is simply not asleep).

package shm

import (
	"runtime/debug"
	"sync"
	"time"
)

// Sweeping. A follower whose stream is busy (its last sleep was shorter
// than sweepJoin) hands its segment to the sweeper instead of sleeping on
// the doorbell or its write cursor, and parks until the sweeper hands it
// back: when the segment has had nothing new for sweepLeave, when a drain
// left records behind (a backlog: the follower reads it at full speed),
// when the producer closed the segment, on a read error, or when the
// follower's own liveness check is due (it then rejoins at once).
const (
	sweepJoin  = 50 * time.Millisecond
	sweepLeave = 200 * time.Millisecond
)

// sweeper reads the segments of the followers handed to it. Safe for
// concurrent use.
type sweeper struct {
	c      *Consumer
	period time.Duration
	idle   int // sweeps without news before a segment is handed back

	mu   sync.Mutex // held for a whole sweep: a follower removed is not being read
	set  []*follower
	wake chan struct{} // the set became non-empty
}

func newSweeper(c *Consumer, period time.Duration) *sweeper {
	return &sweeper{c: c, period: period, idle: max(int(sweepLeave/period), 1), wake: make(chan struct{}, 1)}
}

// add hands f's segment to the sweeper.
func (sw *sweeper) add(f *follower) {
	sw.mu.Lock()
	f.sweepIdle, f.inSweep = 0, true
	sw.set = append(sw.set, f)
	if len(sw.set) == 1 {
		select {
		case sw.wake <- struct{}{}:
		default:
		}
	}
	sw.mu.Unlock()
}

// remove takes f's segment back (a no-op when the sweeper already handed
// it back). When it returns, the sweeper is not reading f's segment.
func (sw *sweeper) remove(f *follower) {
	sw.mu.Lock()
	if f.inSweep {
		sw.dropLocked(f)
	}
	sw.mu.Unlock()
}

func (sw *sweeper) dropLocked(f *follower) {
	f.inSweep = false
	for i, g := range sw.set {
		if g == f {
			last := len(sw.set) - 1
			sw.set[i] = sw.set[last]
			sw.set[last] = nil
			sw.set = sw.set[:last]
			return
		}
	}
}

// run sweeps every period while the set is not empty.
func (sw *sweeper) run() {
	c := sw.c
	defer c.wg.Done()
	debug.SetPanicOnFault(true) // see follower.sweepRead
	tick := time.NewTicker(sw.period)
	defer tick.Stop()
	for {
		sw.mu.Lock()
		empty := len(sw.set) == 0
		sw.mu.Unlock()
		if empty {
			tick.Stop()
			select {
			case <-sw.wake:
			case <-c.stopCh:
				return
			}
			tick.Reset(sw.period)
		}
		select {
		case <-tick.C:
		case <-c.stopCh:
			return
		}
		sw.sweep()
	}
}

// sweep reads each segment of the set once; the followers whose segments
// are handed back are woken.
func (sw *sweeper) sweep() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for i := 0; i < len(sw.set); {
		f := sw.set[i]
		if f.sweepRead(sw.idle) {
			i++
			continue
		}
		sw.dropLocked(f)
		f.kickNow()
	}
}

// sweepWait is wait for a follower of a busy stream: its segment is read by
// the sweeper until it is handed back or d passes (the liveness check is
// due), or the follower is woken (a change of its file, Close).
func (f *follower) sweepWait(d time.Duration) {
	sw := f.c.sweep
	sw.add(f)
	f.sleep(d)
	sw.remove(f)
	// slept stays short (the follower rejoins after its check) unless the
	// sweeper handed the segment back for its silence: then it waits on the
	// doorbell or its write cursor as any idle follower.
	if f.sweepQuiet {
		f.sweepQuiet = false
		f.slept, f.spin = sweepLeave, spinSlow
	}
}

// sweepRead reads f's segment on the sweeper's goroutine (f is parked in
// sweepWait); false hands the segment back to f.
func (f *follower) sweepRead(idle int) (keep bool) {
	s := f.seg
	if s.c.write.Load() == s.lastW {
		f.sweepIdle++
		if f.sweepIdle >= idle || s.closed() {
			f.sweepQuiet = true
			return false
		}
		return true
	}
	if f.silentOff {
		return false // the follower brings it back online before reading
	}
	f.sweepIdle = 0
	done, err := f.sweepDrain()
	if err != nil {
		f.sweepErr = err
		return false
	}
	return done // a backlog: the follower reads it at full speed
}

// sweepDrain is drain with a fault on the mapping (the file truncated while
// mapped) turned into the follower's quarantine error; the sweeper's
// goroutine has debug.SetPanicOnFault.
func (f *follower) sweepDrain() (done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			done, err = false, f.seg.fail("file", 0, corruptf(ErrTruncated, "fault on the mapping (file truncated while mapped?): %v", r))
		}
	}()
	_, done, err = f.drain(drainBudget)
	return done, err
}
