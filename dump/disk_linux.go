package dump

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// freeDisk returns the bytes available to us on dir's file system.
func freeDisk(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("engine: statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// diskSize returns the size of dir's file system (what is not reserved
// for root included).
func diskSize(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

// allocated returns what deleting the file at path frees: its allocated
// blocks (size when they cannot be read).
func allocated(path string, size int64) int64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return size
	}
	return st.Blocks * 512
}

// preallocate reserves n bytes for f without changing its size, so a full
// disk fails here rather than mid-dump.
func preallocate(f *os.File, n int64) error {
	if n <= 0 {
		return nil
	}
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
}
