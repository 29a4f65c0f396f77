package engine

import (
	"fmt"

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
