package durable

import (
	"runtime"
	"testing"
)

// TestLowerIOPriority: the Async writer's thread is put in the
// best-effort class at its lowest level.
func TestLowerIOPriority(t *testing.T) {
	done := make(chan struct{})
	var got int
	var err error
	go func() { // a thread of its own, discarded with the goroutine
		defer close(done)
		runtime.LockOSThread()
		LowerIOPriority()
		got, err = ioPriority()
	}()
	<-done
	if err != nil {
		t.Skipf("ioprio_get: %v", err)
	}
	if want := ioprioClassBE<<ioprioClassShift | ioprioBestEffortLevel; got != want {
		t.Fatalf("I/O priority %#x, want %#x", got, want)
	}
}
