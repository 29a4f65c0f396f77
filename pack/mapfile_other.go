//go:build !linux

package pack

import "os"

// MapFile reads the whole file into memory where mmap is not used.
func MapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
