//go:build linux

package capture

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmmsg receives up to len(msgs) datagrams. The headers' pointers refer
// to Go memory owned by the caller, which stays reachable through msgs.
func recvmmsg(fd uintptr, msgs []unix.Mmsghdr, flags int) (int, syscall.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
	return int(n), e
}
