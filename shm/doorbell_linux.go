package shm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// doorbellFile is a mapped doorbell and what identifies its file.
type doorbellFile struct {
	mem []byte
	uid uint32
	ino uint64
}

// openDoorbell maps dir's doorbell read-write. A missing one is created
// (mode and gid as a segment's) when create is set; replace makes a new one
// in place of a file that is no doorbell (a consumer's right: producers that
// mapped the old one are then told apart by its inode).
func openDoorbell(dir string, create, replace bool, mode os.FileMode, gid int) (doorbellFile, error) {
	path := filepath.Join(dir, DoorbellName)
	var last error
	for range 3 {
		d, err := mapDoorbell(path)
		switch {
		case err == nil:
			return d, nil
		case errors.Is(err, fs.ErrNotExist) && create,
			errors.Is(err, ErrBadDoorbell) && replace:
			last = err
			if err := makeDoorbell(dir, path, mode, gid, replace); err != nil && !errors.Is(err, fs.ErrExist) {
				return doorbellFile{}, err
			}
		default:
			return doorbellFile{}, err
		}
	}
	return doorbellFile{}, last
}

func mapDoorbell(path string) (doorbellFile, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return doorbellFile{}, wrapPath("open", path, err)
	}
	defer unix.Close(fd) // the mapping is all that is kept
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return doorbellFile{}, os.NewSyscallError("fstat", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != DoorbellSize {
		return doorbellFile{}, &os.PathError{Op: "open", Path: path, Err: ErrBadDoorbell}
	}
	mem, err := mapFile(fd, 0, DoorbellSize, true)
	if err != nil {
		return doorbellFile{}, err
	}
	if err := checkDoorbell(mem); err != nil {
		unmap(mem)
		return doorbellFile{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return doorbellFile{mem: mem, uid: st.Uid, ino: uint64(st.Ino)}, nil
}

// makeDoorbell writes a new doorbell to a temporary file and links it into
// place (fs.ErrExist when another process was first), or renames it over
// what is there when replace is set.
func makeDoorbell(dir, path string, mode os.FileMode, gid int, replace bool) error {
	tmp := filepath.Join(dir, DoorbellName+"."+strconv.Itoa(os.Getpid())+".tmp")
	unix.Unlink(tmp)
	fd, err := createSegmentFile(tmp, mode, gid)
	if err != nil {
		return err
	}
	defer unix.Unlink(tmp)
	var b [DoorbellSize]byte
	initDoorbell(b[:])
	_, err = unix.Pwrite(fd, b[:], 0)
	unix.Close(fd)
	if err != nil {
		return os.NewSyscallError("pwrite", err)
	}
	if replace {
		return wrapPath("rename", path, unix.Rename(tmp, path))
	}
	return wrapPath("link", path, unix.Link(tmp, path))
}

// replaceDoorbell makes a new doorbell in place of whatever is there.
func replaceDoorbell(dir string, mode os.FileMode) (doorbellFile, error) {
	path := filepath.Join(dir, DoorbellName)
	if err := makeDoorbell(dir, path, mode, 0, true); err != nil {
		return doorbellFile{}, err
	}
	return mapDoorbell(path)
}

// lockDoorbell takes the directory's doorbell for this consumer alone: an
// exclusive flock(2) on the file of inode ino, held by the returned
// descriptor. The hint bits of the doorbell name slots of one consumer's
// followers, so a second consumer of the directory (a node under test
// beside the closed loop's collector, a viewer beside the recorder) must
// not answer it: it would take the first one's wake-ups. ok is false when
// another consumer holds it or the file is no longer that inode.
func lockDoorbell(dir string, ino uint64) (fd int, ok bool, err error) {
	fd, err = unix.Open(filepath.Join(dir, DoorbellName), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Ino) != ino {
		unix.Close(fd)
		return -1, false, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return -1, false, nil
		}
		return -1, false, os.NewSyscallError("flock", err)
	}
	return fd, true, nil
}
