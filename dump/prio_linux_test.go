package dump

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"

	"golang.org/x/sys/unix"
)

// TestDumperThreadPriority: dumps are written on a thread whose nice value
// is WriterNice above the process's and whose I/O priority is the
// best-effort class's lowest level; with KeepPriority, at the process's.
func TestDumperThreadPriority(t *testing.T) {
	base, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	baseNice := 20 - base
	if baseNice+WriterNice > 19 {
		t.Skipf("the process's nice value %d leaves no room", baseNice)
	}
	for _, keep := range []bool{false, true} {
		var nice, ioprio int
		seen := make(chan struct{}, 1)
		nw := func(path string, o WriterOptions) (Writer, error) {
			p, _ := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
			nice = 20 - p
			r, _, _ := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(unix.Gettid()), 0)
			ioprio = int(r)
			seen <- struct{}{}
			return NewPackWriteWriter(path, o)
		}
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0))},
			Dump: Config{NewWriter: nw, KeepPriority: keep}})
		ids := discover(t, r, "a")
		feed(r, vc, ids, t0, t0+100*ms, ms)
		id, err := r.Trigger(TriggerParams{Reason: "prio"})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(t0 + 200*ms)
		if res := wait(t, r, id); res.Err != nil {
			t.Fatal(res.Err)
		}
		<-seen
		wantNice, wantIO := baseNice+WriterNice, 2<<13|7
		if keep {
			wantNice = baseNice
			if ioprio == wantIO {
				t.Errorf("KeepPriority: the dumper's thread has the lowered I/O priority %#x", ioprio)
			}
		} else if ioprio != wantIO {
			t.Errorf("the dumper's thread's I/O priority is %#x, want %#x", ioprio, wantIO)
		}
		if nice != wantNice {
			t.Errorf("keep=%v: the dumper's thread's nice value is %d, want %d", keep, nice, wantNice)
		}
	}
}
