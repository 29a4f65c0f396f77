package capture

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ProbeUDP opens the socket NewUDP would open for opts (bound, with its
// options, the multicast group joined) and closes it again, so that a
// checker can say beforehand what would stop a source from starting: an
// address not on this host, a port in use (errors.Is(err,
// unix.EADDRINUSE)), a privileged port, a group that cannot be joined. It
// reads nothing.
func ProbeUDP(opts UDPOptions) error {
	o, tmpl, err := opts.withDefaults()
	if err != nil {
		return err
	}
	conn, err := openUDPSocket(&o, tmpl.has(fieldDst))
	if err != nil {
		return err
	}
	return conn.Close()
}

// ProbeRaw checks what NewRaw needs of the system for opts without
// capturing: the interface, an AF_PACKET socket (CAP_NET_RAW), TPACKET_V3
// and, with a filter, loading and attaching it (CAP_BPF where unprivileged
// BPF is off). The socket is closed again before any frame reaches it (it
// is never bound) and no ring is mapped.
func ProbeRaw(opts RawOptions) error {
	o, _, err := opts.withDefaults(os.Getpagesize())
	if err != nil {
		return err
	}
	if _, err := net.InterfaceByName(o.Interface); err != nil {
		return fmt.Errorf("capture: raw: %w", err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("capture: raw %s: socket(AF_PACKET): %w", o.Interface, err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("capture: raw %s: PACKET_VERSION TPACKET_V3: %w", o.Interface, err)
	}
	if o.Filter != nil {
		if err := attachFilter(fd, o.Filter); err != nil {
			return fmt.Errorf("capture: raw %s: %w", o.Interface, err)
		}
	}
	return nil
}
