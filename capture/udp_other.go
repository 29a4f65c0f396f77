//go:build !linux

package capture

import (
	"context"
	"net/netip"

	"github.com/edr-lite/edr-lite/ingest"
)

// UDPSource receives UDP datagrams; on this platform it is not supported.
type UDPSource struct{}

// NewUDP returns ErrNotSupported on this platform.
func NewUDP(UDPOptions, ingest.Sink) (*UDPSource, error) { return nil, ErrNotSupported }

// LocalAddr returns the zero address.
func (*UDPSource) LocalAddr() netip.AddrPort { return netip.AddrPort{} }

// RcvBuf returns ErrNotSupported.
func (*UDPSource) RcvBuf() (int, error) { return 0, ErrNotSupported }

// Stats returns zero counters.
func (*UDPSource) Stats() Stats { return Stats{} }

// Run returns ErrNotSupported.
func (*UDPSource) Run(context.Context) error { return ErrNotSupported }

// Close does nothing.
func (*UDPSource) Close() error { return nil }
