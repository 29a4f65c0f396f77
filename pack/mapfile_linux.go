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
// and they may be handed to C.
func MapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
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
	return b, func() error { return unix.Munmap(b) }, nil
}
