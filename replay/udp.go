package replay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// MaxDatagram is the largest UDP payload the UDP output sends (the IPv4
// limit); longer messages are dropped and counted.
const MaxDatagram = 65507

// UDPOptions configure a UDPOutput.
type UDPOptions struct {
	// Base is "host:port". Topics not named in Map are sent to host, one
	// port per topic: the i-th topic in sorted topic order (Player.Topics,
	// sorted by "name" / "name#channel") goes to port+i.
	Base string
	// Map sends the topics it names ("name" or "name#channel") to the
	// given "host:port" instead.
	Map map[string]string
}

// UDPOutput sends each message as one datagram carrying the recorded
// payload bytes exactly (no header), from one unconnected socket, to its
// topic's address. A message longer than MaxDatagram is dropped (counted
// in Stats.Dropped).
//
// A UDPOutput is not safe for concurrent use (the Player drives it).
type UDPOutput struct {
	opts  UDPOptions
	conn  *net.UDPConn
	dests []netip.AddrPort
}

// NewUDP returns a UDP Output.
func NewUDP(opts UDPOptions) *UDPOutput { return &UDPOutput{opts: opts} }

// Destinations returns the address of each topic, by Topic.Index (after
// Open).
func (o *UDPOutput) Destinations() []netip.AddrPort { return o.dests }

func resolveUDP(s string) (netip.AddrPort, error) {
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: udp address %q: %v", ErrOptions, s, err)
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// Open resolves every topic's address and opens the socket.
func (o *UDPOutput) Open(topics []Topic) error {
	var base netip.AddrPort
	if o.opts.Base != "" {
		var err error
		if base, err = resolveUDP(o.opts.Base); err != nil {
			return err
		}
	}
	o.dests = make([]netip.AddrPort, len(topics))
	for i := range topics {
		t := &topics[i]
		s, ok := o.opts.Map[t.String()]
		if !ok {
			s, ok = o.opts.Map[t.Name]
		}
		if ok {
			a, err := resolveUDP(s)
			if err != nil {
				return fmt.Errorf("topic %s: %w", t, err)
			}
			o.dests[i] = a
			continue
		}
		if !base.IsValid() {
			return fmt.Errorf("%w: topic %s has no UDP address (no base given)", ErrOptions, t)
		}
		port := int(base.Port()) + i
		if port > 65535 {
			return fmt.Errorf("%w: topic %s: port %d+%d is past 65535", ErrOptions, t, base.Port(), i)
		}
		o.dests[i] = netip.AddrPortFrom(base.Addr(), uint16(port))
	}
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return fmt.Errorf("replay: udp socket: %w", err)
	}
	o.conn = conn
	return nil
}

// Write sends m to its topic's address.
func (o *UDPOutput) Write(m *Message) error {
	if len(m.Data) > MaxDatagram {
		return ErrTooLarge
	}
	_, err := o.conn.WriteToUDPAddrPort(m.Data, o.dests[m.Topic.Index])
	if err != nil && errors.Is(err, syscall.EMSGSIZE) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return err
}

// Close closes the socket.
func (o *UDPOutput) Close() error {
	if o.conn == nil {
		return nil
	}
	err := o.conn.Close()
	o.conn = nil
	return err
}
