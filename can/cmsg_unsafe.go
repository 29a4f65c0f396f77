//go:build linux

package can

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// parseCmsgs reads a recvmsg's control messages: the kernel's receive
// time stamp (SCM_TIMESTAMPNS, 0 when absent) and the socket's drop
// counter (SO_RXQ_OVFL). Every header's length is checked against the
// buffer before its data is read.
func parseCmsgs(b []byte) (ts int64, drops uint32, hasDrops bool) {
	for len(b) >= unix.CmsgSpace(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.CmsgLen(0) || l > len(b) {
			break
		}
		data := b[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts = (*unix.Timespec)(unsafe.Pointer(&data[0])).Nano()
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			drops, hasDrops = *(*uint32)(unsafe.Pointer(&data[0])), true
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return ts, drops, hasDrops
}
