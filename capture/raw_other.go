//go:build !linux

package capture

import (
	"context"

	"github.com/edr-lite/edr-lite/ingest"
)

// RawSource captures frames from an interface; on this platform it is not
// supported.
type RawSource struct{}

// NewRaw returns ErrNotSupported on this platform.
func NewRaw(RawOptions, ingest.Sink) (*RawSource, error) { return nil, ErrNotSupported }

// Stats returns zero counters.
func (*RawSource) Stats() Stats { return Stats{} }

// Run returns ErrNotSupported.
func (*RawSource) Run(context.Context) error { return ErrNotSupported }

// Close does nothing.
func (*RawSource) Close() error { return nil }
