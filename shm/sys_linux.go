package shm

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps length bytes of fd at offset, read-only unless writable.
func mapFile(fd int, offset int64, length int, writable bool) ([]byte, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(fd, offset, length, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return b, nil
}

func unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return os.NewSyscallError("munmap", unix.Munmap(b))
}

// pidGone reports whether no process pid exists (kill(pid, 0) says ESRCH).
// EPERM means the process exists but belongs to someone else.
func pidGone(pid uint32) bool {
	if pid == 0 || pid > 1<<22 {
		return true
	}
	return errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}

// fileID is what identifies one file: a replacement gets a new one.
type fileID struct {
	dev, ino uint64
}

type fileInfo struct {
	id    fileID
	uid   uint32
	size  int64
	reg   bool
	ctime int64 // inode change time, ns: a segment's rename into place
}

func fstat(fd int) (fileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileInfo{}, os.NewSyscallError("fstat", err)
	}
	return statInfo(&st), nil
}

func lstat(path string) (fileInfo, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileInfo{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return statInfo(&st), nil
}

func statInfo(st *unix.Stat_t) fileInfo {
	return fileInfo{
		id:    fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		uid:   st.Uid,
		size:  st.Size,
		reg:   st.Mode&unix.S_IFMT == unix.S_IFREG,
		ctime: st.Ctim.Nano(),
	}
}

// openSegmentFile opens path for a consumer without following a symlink and
// without blocking on a FIFO; read-write when permitted, else read-only.
func openSegmentFile(path string) (fd int, writable bool, err error) {
	const flags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err = unix.Open(path, unix.O_RDWR|flags, 0)
	if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
		fd, err = unix.Open(path, unix.O_RDONLY|flags, 0)
		return fd, false, wrapPath("open", path, err)
	}
	return fd, true, wrapPath("open", path, err)
}

// createSegmentFile creates path exclusively with mode (umask ignored) and
// group gid (when gid > 0).
func createSegmentFile(path string, mode os.FileMode, gid int) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return -1, wrapPath("create", path, err)
	}
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		unix.Close(fd)
		return -1, wrapPath("chmod", path, err)
	}
	if gid > 0 {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			unix.Close(fd)
			return -1, wrapPath("chown", path, err)
		}
	}
	return fd, nil
}

func truncateFile(fd int, size int64) error {
	return os.NewSyscallError("ftruncate", unix.Ftruncate(fd, size))
}

func closeFD(fd int) error { return os.NewSyscallError("close", unix.Close(fd)) }

func wrapPath(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}

func getpid() uint32  { return uint32(unix.Getpid()) }
func geteuid() uint32 { return uint32(unix.Geteuid()) }

// platformSupported refuses a host whose byte order the format does not support.
func platformSupported() error {
	if bigEndian() {
		return errBigEndian
	}
	return nil
}

var errBigEndian = errors.New("shm: big-endian host not supported")

const oNoFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK // and never block on a FIFO

// preadFull reads len(b) bytes of fd at off; a file shorter than that is
// io.ErrUnexpectedEOF.
func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("pread", err)
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}
