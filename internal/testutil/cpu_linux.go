package testutil

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the calling OS thread's CPU time (CLOCK_THREAD_CPUTIME_ID):
// what a test that locks its goroutine to its thread spent computing, not
// the time other processes on a shared machine took from it. 0 if the
// clock cannot be read.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
