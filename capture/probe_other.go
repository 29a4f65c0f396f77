//go:build !linux

package capture

// ProbeUDP returns ErrNotSupported on this platform.
func ProbeUDP(UDPOptions) error { return ErrNotSupported }

// ProbeRaw returns ErrNotSupported on this platform.
func ProbeRaw(RawOptions) error { return ErrNotSupported }
