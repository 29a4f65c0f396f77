package clock

import (
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
