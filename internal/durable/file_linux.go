package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Ensure preallocates (keeping the size) to cover [0, end): in Prealloc
// steps, or exactly what is needed when the disk has no room for a step.
func (d *File) Ensure(end int64) error {
	if end <= d.allocated {
		return nil
	}
	need := end - d.allocated
	grow := max(need, d.prealloc)
	err := unix.Fallocate(d.fd, unix.FALLOC_FL_KEEP_SIZE, d.allocated, grow)
	if errors.Is(err, unix.ENOSPC) && grow > need {
		grow = need
		err = unix.Fallocate(d.fd, unix.FALLOC_FL_KEEP_SIZE, d.allocated, grow)
	}
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return &os.PathError{Op: "fallocate", Path: d.path, Err: err}
	}
	d.allocated += grow
	return nil
}

// wrote accounts n bytes written: writeback starts every WritebackChunk,
// and with a MaxInFlight the oldest chunks are waited for.
func (d *File) wrote(n int64) {
	d.off += n
	if d.off-d.kicked < WritebackChunk {
		return
	}
	_ = unix.SyncFileRange(d.fd, d.kicked, d.off-d.kicked, unix.SYNC_FILE_RANGE_WRITE)
	d.kicked = d.off
	if d.maxFlight > 0 && d.kicked-d.waited > d.maxFlight {
		to := d.kicked - d.maxFlight
		_ = unix.SyncFileRange(d.fd, d.waited, to-d.waited,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		d.waited = to
	}
}

// writev writes every piece (short writes continued).
func (d *File) writev(pieces [][]byte) error {
	for len(pieces) > 0 {
		m := min(len(pieces), maxIov)
		n, err := unix.Writev(d.fd, pieces[:m])
		if n > 0 {
			d.wrote(int64(n))
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return &os.PathError{Op: "writev", Path: d.path, Err: err}
		}
		pieces = advance(pieces, n)
	}
	return nil
}

// maxIov is IOV_MAX on Linux.
const maxIov = 1024

func (d *File) datasync() error { return unix.Fdatasync(d.fd) }

// ioprioBestEffortLowest is IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7)
// (linux/ioprio.h): the best-effort class at its lowest level.
const (
	ioprioClassShift      = 13
	ioprioClassBE         = 2
	ioprioWhoProcess      = 1
	ioprioBestEffortLevel = 7
)

// LowerIOPriority puts the calling thread's I/O in the best-effort class
// at the lowest level, so the I/O of the process's other threads goes
// first where the block layer's scheduler honours priorities. Best effort:
// an error (an old kernel, a seccomp filter) changes nothing.
func LowerIOPriority() {
	prio := ioprioClassBE<<ioprioClassShift | ioprioBestEffortLevel
	_, _, _ = unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(unix.Gettid()), uintptr(prio))
}

// ioPriority returns the calling thread's I/O priority (class << 13 |
// level), for tests.
func ioPriority() (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(unix.Gettid()), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
