//go:build linux

package shm

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futexWait sleeps while *addr == val, at most d. Spurious returns are fine.
// addr lies in a MAP_SHARED file mapping, so the futex is shared between
// processes (no FUTEX_PRIVATE_FLAG).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every process sleeping on addr.
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1<<30, 0, 0, 0)
}

// From <linux/futex.h>; x/sys/unix does not export them.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)
