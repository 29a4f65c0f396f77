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

// preallocate reserves n bytes for f without changing its size, so a full
// disk fails here rather than mid-dump.
func preallocate(f *os.File, n int64) error {
	if n <= 0 {
		return nil
	}
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
}
