//go:build !linux

package pack

import (
	"fmt"
)

// Create is the durable file writer (write(2) or mmap); it is supported on
// Linux only. Elsewhere it returns ErrNotSupported: use NewStreamWriter over
// an *os.File.
func Create(path string, opts WriterOptions) (*Writer, error) {
	return nil, fmt.Errorf("%w: mmap writer (%s); use NewStreamWriter", ErrNotSupported, path)
}
