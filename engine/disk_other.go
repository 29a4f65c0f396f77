//go:build !linux

package engine

import "errors"

// freeDisk is not supported here: MinFreeDisk cannot be honoured.
func freeDisk(dir string) (int64, error) {
	return 0, errors.New("engine: min_free_disk is not supported on this platform")
}
