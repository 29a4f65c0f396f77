// MapFile: the read-only mapping of a whole file that readers and Verify
// use.

package pack

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// MapFile maps path read-only (a file of 0 bytes gives nil). The returned
// release unmaps it. The bytes are not Go memory: writing to them crashes,
// and they may be handed to C. Anything but a regular file is refused.
func MapFile(path string) ([]byte, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("pack: %s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("pack: %s: %d bytes do not fit the address space", path, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	mapped.add(path, b)
	return b, func() error {
		mapped.remove(b)
		return unix.Munmap(b)
	}, nil
}

// fileKind names what a non-regular file is, for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
