package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestVirtual(t *testing.T) {
	v := NewVirtual(100)
	if v.Now() != 100 {
		t.Fatalf("Now = %d, want 100", v.Now())
	}
	if got := v.Advance(time.Microsecond); got != 1100 {
		t.Fatalf("Advance = %d, want 1100", got)
	}
	v.Set(5)
	if v.Now() != 5 {
		t.Fatalf("Set: Now = %d, want 5", v.Now())
	}
}

func TestCoarseFollowsSource(t *testing.T) {
	v := NewVirtual(1)
	c := NewCoarse(v, time.Millisecond)
	defer c.Close()
	if c.Now() != 1 {
		t.Fatalf("initial Now = %d, want 1", c.Now())
	}
	v.Set(42)
	deadline := time.After(5 * time.Second)
	for c.Now() != 42 {
		select {
		case <-deadline:
			t.Fatalf("coarse clock never caught up: %d", c.Now())
		default:
			time.Sleep(time.Millisecond)
		}
	}
	c.Close()
	c.Close() // idempotent
}

// countingClock counts its reads.
type countingClock struct{ n atomic.Int64 }

func (c *countingClock) Now() int64 { return c.n.Add(1) }

// TestCoarseGoesIdle: a coarse clock nobody reads stops refreshing (an
// idle recorder used to wake 1000 times a second for it); a read then takes
// the source's time and starts it again.
func TestCoarseGoesIdle(t *testing.T) {
	src := &countingClock{}
	c := NewCoarse(src, time.Millisecond)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !c.idle.Load() {
		if time.Now().After(deadline) {
			t.Fatal("never went idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := src.n.Load()
	time.Sleep(50 * time.Millisecond)
	if n := src.n.Load() - before; n != 0 {
		t.Fatalf("%d refreshes while idle", n)
	}
	if got := c.Now(); got != before+1 {
		t.Fatalf("read while idle: %d, want the source's next reading %d", got, before+1)
	}
	for c.idle.Load() {
		if time.Now().After(deadline) {
			t.Fatal("a read did not wake the refresher")
		}
		time.Sleep(time.Millisecond)
	}
}
