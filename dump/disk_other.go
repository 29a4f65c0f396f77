//go:build !linux

package dump

import (
	"errors"
	"os"
)

// freeDisk is not supported here: MinFreeDisk cannot be honoured.
func freeDisk(dir string) (int64, error) {
	return 0, errors.New("engine: min_free_disk is not supported on this platform")
}

// diskSize is not known here.
func diskSize(dir string) (int64, error) { return 0, errors.ErrUnsupported }

// allocated is the size here.
func allocated(path string, size int64) int64 { return size }

// preallocate is a no-op here.
func preallocate(f *os.File, n int64) error { return nil }
