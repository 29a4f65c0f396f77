package dump

import (
	"github.com/edr-lite/edr-lite/internal/durable"

	"golang.org/x/sys/unix"
)

// lowerPriority lowers the calling thread's (locked by the caller) I/O
// priority to the best-effort class's lowest level and raises its nice
// value by WriterNice. Best effort: where the kernel refuses (a seccomp
// filter, a nice value already at its limit) the thread keeps its
// priority.
func lowerPriority() {
	durable.LowerIOPriority()
	tid := unix.Gettid()
	if cur, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil {
		// getpriority(2) returns 20 - nice
		_ = unix.Setpriority(unix.PRIO_PROCESS, tid, min(20-cur+WriterNice, 19))
	}
}
