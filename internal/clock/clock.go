package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock reads the current time in nanoseconds since the UNIX epoch.
type Clock interface {
	Now() int64
}

// System is the wall clock.
type System struct{}

// Now returns time.Now() in UNIX nanoseconds.
func (System) Now() int64 { return time.Now().UnixNano() }

// Func adapts a function to Clock.
type Func func() int64

// Now calls f.
func (f Func) Now() int64 { return f() }

// Virtual is a manually driven clock for tests and replay. The zero value
// reads 0.
type Virtual struct {
	ns atomic.Int64
}

// NewVirtual returns a virtual clock reading start.
func NewVirtual(start int64) *Virtual {
	v := &Virtual{}
	v.ns.Store(start)
	return v
}

// Now returns the current virtual time.
func (v *Virtual) Now() int64 { return v.ns.Load() }

// Set moves the clock to ns (which may be earlier than now).
func (v *Virtual) Set(ns int64) { v.ns.Store(ns) }

// Advance moves the clock forward by d and returns the new time.
func (v *Virtual) Advance(d time.Duration) int64 { return v.ns.Add(int64(d)) }

// Coarse is a clock refreshed by a background goroutine every resolution; a
// read is one atomic load. After CoarseIdleTicks refreshes nobody read, the
// goroutine stops ticking (an idle recorder wakes for nothing) and a read
// takes the source's time itself and restarts it: no allocation, no lock.
// Stop it with Close.
type Coarse struct {
	ns   atomic.Int64
	_    [56]byte // keep the hot word on its own cache line
	used atomic.Bool
	idle atomic.Bool // the refresher sleeps: Now reads src
	wake chan struct{}
	stop chan struct{}
	once sync.Once
	src  Clock
}

// CoarseIdleTicks is how many refreshes nobody reads before a Coarse clock
// stops ticking.
const CoarseIdleTicks = 100

// NewCoarse starts a coarse clock over src (System when nil) refreshed every
// resolution (1ms when <= 0).
func NewCoarse(src Clock, resolution time.Duration) *Coarse {
	if src == nil {
		src = System{}
	}
	if resolution <= 0 {
		resolution = time.Millisecond
	}
	c := &Coarse{stop: make(chan struct{}), wake: make(chan struct{}, 1), src: src}
	c.ns.Store(src.Now())
	go c.refresh(resolution)
	return c
}

func (c *Coarse) refresh(resolution time.Duration) {
	t := time.NewTicker(resolution)
	defer t.Stop()
	unread := 0
	for {
		select {
		case <-t.C:
			c.ns.Store(c.src.Now())
			if c.used.Load() {
				c.used.Store(false)
				unread = 0
				continue
			}
			if unread++; unread < CoarseIdleTicks {
				continue
			}
			t.Stop()
			c.idle.Store(true)
			select {
			case <-c.wake:
			case <-c.stop:
				return
			}
			c.idle.Store(false)
			c.ns.Store(c.src.Now())
			t.Reset(resolution)
			unread = 0
		case <-c.stop:
			return
		}
	}
}

// Now returns the last refreshed time (the source's own when the refresher
// sleeps, which this wakes).
func (c *Coarse) Now() int64 {
	if c.idle.Load() {
		ns := c.src.Now()
		c.ns.Store(ns)
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return ns
	}
	if !c.used.Load() {
		c.used.Store(true)
	}
	return c.ns.Load()
}

// Close stops the refresh goroutine. Now keeps returning the last value (or,
// when the refresher had gone idle, the source's time).
func (c *Coarse) Close() { c.once.Do(func() { close(c.stop) }) }
