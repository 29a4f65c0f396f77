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
// read is one atomic load. Stop it with Close.
type Coarse struct {
	ns   atomic.Int64
	_    [56]byte // keep the hot word on its own cache line
	stop chan struct{}
	once sync.Once
	src  Clock
}

// NewCoarse starts a coarse clock over src (System when nil) refreshed every
// resolution (1ms when <= 0).
func NewCoarse(src Clock, resolution time.Duration) *Coarse {
	if src == nil {
		src = System{}
	}
	if resolution <= 0 {
		resolution = time.Millisecond
	}
	c := &Coarse{stop: make(chan struct{}), src: src}
	c.ns.Store(src.Now())
	go func() {
		t := time.NewTicker(resolution)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				c.ns.Store(c.src.Now())
			case <-c.stop:
				return
			}
		}
	}()
	return c
}

// Now returns the last refreshed time.
func (c *Coarse) Now() int64 { return c.ns.Load() }

// Close stops the refresh goroutine. Now keeps returning the last value.
func (c *Coarse) Close() { c.once.Do(func() { close(c.stop) }) }
