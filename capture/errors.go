package capture

import (
	"errors"
	"fmt"
)

// Sentinel errors. Parse errors wrap ErrTruncated or ErrMalformed and name the
// header field; they are package-level values, so reporting one allocates
// nothing.
var (
	// ErrTruncated reports a frame shorter than one of its headers says.
	ErrTruncated = errors.New("capture: truncated frame")
	// ErrMalformed reports a header whose fields contradict each other.
	ErrMalformed = errors.New("capture: malformed header")
	// ErrTemplate reports a topic template that cannot be parsed.
	ErrTemplate = errors.New("capture: bad topic template")
	// ErrFilter reports a Filter that cannot be compiled.
	ErrFilter = errors.New("capture: bad filter")
	// ErrOptions reports invalid source options.
	ErrOptions = errors.New("capture: bad options")
	// ErrNotSupported is returned on platforms without the needed sockets.
	ErrNotSupported = errors.New("capture: not supported on this platform")
)

var (
	errEthernetShort = fmt.Errorf("%w: ethernet header needs 14 bytes", ErrTruncated)
	errVLANShort     = fmt.Errorf("%w: vlan tag needs 4 bytes", ErrTruncated)
	errIPv4Short     = fmt.Errorf("%w: ipv4 header", ErrTruncated)
	errIPv4Version   = fmt.Errorf("%w: ipv4 version field is not 4", ErrMalformed)
	errIPv4IHL       = fmt.Errorf("%w: ipv4 ihl below 5", ErrMalformed)
	errIPv4Total     = fmt.Errorf("%w: ipv4 total length below header length", ErrMalformed)
	errIPv4Body      = fmt.Errorf("%w: ipv4 total length beyond frame", ErrTruncated)
	errIPv6Short     = fmt.Errorf("%w: ipv6 header needs 40 bytes", ErrTruncated)
	errIPv6Version   = fmt.Errorf("%w: ipv6 version field is not 6", ErrMalformed)
	errIPv6Body      = fmt.Errorf("%w: ipv6 payload length beyond frame", ErrTruncated)
	errIPv6Ext       = fmt.Errorf("%w: ipv6 extension header", ErrTruncated)
	errIPv6ExtMany   = fmt.Errorf("%w: too many ipv6 extension headers", ErrMalformed)
	errUDPShort      = fmt.Errorf("%w: udp header needs 8 bytes", ErrTruncated)
	errUDPLength     = fmt.Errorf("%w: udp length below 8", ErrMalformed)
	errUDPBody       = fmt.Errorf("%w: udp length beyond ip payload", ErrTruncated)
)

func errOption(name string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v: %s", ErrOptions, name, v, want)
}
