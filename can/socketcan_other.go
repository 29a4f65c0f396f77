//go:build !linux

package can

import (
	"context"
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/ingest"
)

// ErrNotSupported: SocketCAN is Linux's.
var ErrNotSupported = errors.New("can: SocketCAN is not supported on this platform")

// SocketCANOptions configure a SocketCAN source (Linux only).
type SocketCANOptions struct {
	Interface string
	Bus       BusOptions
	Filters   []IDFilter
}

// SocketCAN is a SocketCAN source (Linux only).
type SocketCAN struct{}

// NewSocketCAN returns ErrNotSupported.
func NewSocketCAN(ingest.Sink, SocketCANOptions) (*SocketCAN, error) {
	return nil, fmt.Errorf("%w", ErrNotSupported)
}

// ProbeSocketCAN returns ErrNotSupported.
func ProbeSocketCAN(SocketCANOptions) error { return fmt.Errorf("%w", ErrNotSupported) }

func (s *SocketCAN) Bus() *Bus                     { return nil }
func (s *SocketCAN) Run(ctx context.Context) error { return ErrNotSupported }
func (s *SocketCAN) Close() error                  { return nil }
