//go:build !linux

package shm

import (
	"os"
	"time"
)

func mapFile(fd int, offset int64, length int, writable bool) ([]byte, error) {
	return nil, ErrNotSupported
}
func unmap(b []byte) error    { return nil }
func pidGone(pid uint32) bool { return true }

type owner struct{ pid uint32 }

type pidTable struct{}

func newOwner(pid uint32, startNs int64, tab *pidTable) owner { return owner{pid: pid} }
func usablePID(pid uint32) bool                               { return pid > 1 }
func (o *owner) gone() bool                                   { return pidGone(o.pid) }
func (o *owner) close()                                       {}
func ownerGone(pid uint32, startNs int64) bool                { return pidGone(pid) }

type fileID struct{ dev, ino uint64 }

type fileInfo struct {
	id    fileID
	uid   uint32
	size  int64
	reg   bool
	ctime int64
}

func fstat(fd int) (fileInfo, error)                 { return fileInfo{}, ErrNotSupported }
func lstat(path string) (fileInfo, error)            { return fileInfo{}, ErrNotSupported }
func openSegmentFile(path string) (int, bool, error) { return -1, false, ErrNotSupported }
func createSegmentFile(path string, mode os.FileMode, gid int) (int, error) {
	return -1, ErrNotSupported
}
func truncateFile(fd int, size int64) error               { return ErrNotSupported }
func preadFull(fd int, b []byte, off int64) error         { return ErrNotSupported }
func closeFD(fd int) error                                { return nil }
func getpid() uint32                                      { return uint32(os.Getpid()) }
func geteuid() uint32                                     { return uint32(os.Geteuid()) }
func futexWait(addr *uint32, val uint32, d time.Duration) {}
func futexWake(addr *uint32)                              {}
func platformSupported() error                            { return ErrNotSupported }

const oNoFollow = 0

type doorbellFile struct {
	mem []byte
	uid uint32
	ino uint64
}

func openDoorbell(dir string, create, replace bool, mode os.FileMode, gid int) (doorbellFile, error) {
	return doorbellFile{}, ErrNotSupported
}

func replaceDoorbell(dir string, mode os.FileMode) (doorbellFile, error) {
	return doorbellFile{}, ErrNotSupported
}

func lockDoorbell(dir string, ino uint64) (int, bool, error) { return -1, false, ErrNotSupported }
