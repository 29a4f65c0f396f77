package arena

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapSlab obtains size bytes of anonymous, private, zeroed memory outside the
// Go heap, optionally locked into RAM.
func mapSlab(size int, lock bool) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("arena: mmap %d bytes: %w", size, err)
	}
	if lock {
		if err := unix.Mlock(mem); err != nil {
			uerr := unix.Munmap(mem)
			if uerr != nil {
				return nil, fmt.Errorf("arena: mlock %d bytes: %w (and munmap: %v)", size, err, uerr)
			}
			return nil, fmt.Errorf("arena: mlock %d bytes (raise RLIMIT_MEMLOCK or disable locking): %w", size, err)
		}
	}
	return mem, nil
}

// unmapSlab returns the slab to the kernel.
func unmapSlab(mem []byte) error {
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("arena: munmap: %w", err)
	}
	return nil
}

// pageSize is the unit the slab is touched in.
func pageSize() int { return unix.Getpagesize() }
