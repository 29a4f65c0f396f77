//go:build !linux

package pack

import (
	"fmt"
	"os"
)

// Create is the mmap writer; it is supported on Linux only. Elsewhere it
// returns ErrNotSupported: use NewStreamWriter over an *os.File.
func Create(path string, opts WriterOptions) (*Writer, error) {
	return nil, fmt.Errorf("%w: mmap writer (%s); use NewStreamWriter", ErrNotSupported, path)
}

// mapFile reads the whole file into memory where mmap is not used.
func mapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
