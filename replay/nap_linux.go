package replay

import (
	"time"

	"golang.org/x/sys/unix"
)

// nap sleeps for d with clock_nanosleep on CLOCK_MONOTONIC: the kernel's
// timer slack (50µs by default) instead of the Go timers' millisecond
// netpoller resolution. The goroutine blocks in the system call; the
// runtime hands its P to other goroutines meanwhile.
func nap(d time.Duration) {
	req := unix.NsecToTimespec(int64(d))
	var rem unix.Timespec
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &req, &rem) == unix.EINTR {
		req = rem
	}
}
