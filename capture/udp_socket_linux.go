// The UDP source's socket: opening and binding it, its socket options
// (GRO, drop counter, receive buffer, pktinfo), multicast join, and reading
// back its receive buffer size. The source and its recvmmsg loop are in
// udp_linux.go.

package capture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openUDPSocket opens the socket o describes: bound to o.Addr (to the group
// address itself when that is a multicast group, which it then joins on
// o.Interface), with the options setUDPOptions sets (IP/IPv6 pktinfo when
// wantDst).
func openUDPSocket(o *UDPOptions, wantDst bool) (*net.UDPConn, error) {
	ap, err := netip.ParseAddrPort(fixHost(o.Addr))
	if err != nil {
		return nil, fmt.Errorf("%w: Addr %q: %v", ErrOptions, o.Addr, err)
	}
	network := "udp"
	switch {
	case o.Addr != "" && o.Addr[0] == ':':
		// dual stack
	case ap.Addr().Is4():
		network = "udp4"
	default:
		network = "udp6"
	}
	group := ap.Addr().Unmap()
	if !group.IsMulticast() {
		group = netip.Addr{}
	}
	var sockErr error
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		err := c.Control(func(fd uintptr) {
			sockErr = setUDPOptions(int(fd), o, group.IsValid(), wantDst, network)
		})
		return errors.Join(err, sockErr)
	}}
	var pc net.PacketConn
	if group.IsValid() {
		pc, err = listenGroup(ap, o.Interface, func(fd int) error { return setUDPOptions(fd, o, true, wantDst, network) })
	} else {
		pc, err = lc.ListenPacket(context.Background(), network, o.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("capture: listen %s: %w", o.Addr, err)
	}
	conn := pc.(*net.UDPConn)
	if group.IsValid() {
		if err := joinGroup(conn, group, o.Interface); err != nil {
			conn.Close()
			return nil, fmt.Errorf("capture: join %s on %q: %w", group, o.Interface, err)
		}
	}
	return conn, nil
}

// listenGroup binds a UDP socket to the multicast group address itself
// (net.ListenPacket would bind the wildcard address, which also receives
// unicast datagrams to the port).
//
// An IPv6 group of link-local scope (ff02::/16) is bound on the interface
// named by ifname (its scope id), as the kernel requires.
func listenGroup(ap netip.AddrPort, ifname string, setopts func(fd int) error) (net.PacketConn, error) {
	var family int
	var sa unix.Sockaddr
	if g := ap.Addr().Unmap(); g.Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: g.As4()}
	} else {
		sa6 := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: g.As16()}
		if ifname != "" && (g.IsLinkLocalMulticast() || g.IsInterfaceLocalMulticast()) {
			ifi, err := net.InterfaceByName(ifname)
			if err != nil {
				return nil, err
			}
			sa6.ZoneId = uint32(ifi.Index)
		}
		family, sa = unix.AF_INET6, sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	if err := setopts(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind: %w", err)
	}
	f := os.NewFile(uintptr(fd), "udp:"+ap.String())
	defer f.Close() // FilePacketConn holds a duplicate
	return net.FilePacketConn(f)
}

// setUDPOptions sets the socket options of a UDP source on fd before it is
// bound: UDP_GRO (when o.GRO), SO_REUSEADDR (multicast), SO_RXQ_OVFL (the
// drop counter), SO_TIMESTAMPNS (receive times), the receive buffer size (SO_RCVBUFFORCE, falling back to
// SO_RCVBUF) and, when pktinfo, IP_PKTINFO / IPV6_RECVPKTINFO for the
// families network covers.
func setUDPOptions(fd int, o *UDPOptions, multicast, pktinfo bool, network string) error {
	rcvbuf := o.RcvBuf
	if o.GRO {
		if err := unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
			return fmt.Errorf("UDP_GRO: %w", err)
		}
	}
	if multicast {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fmt.Errorf("SO_REUSEADDR: %w", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); err != nil {
		return fmt.Errorf("SO_RXQ_OVFL: %w", err)
	}
	// The kernel's receive time of each datagram, as the raw source has
	// TPACKET's: the 64-bit layout where the kernel has it (5.1+), else
	// the old one; without either, datagrams get the batch's clock reading.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, 1) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, 1)
	}
	if rcvbuf > 0 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
				return fmt.Errorf("SO_RCVBUF %d: %w", rcvbuf, err)
			}
		}
	}
	if pktinfo {
		if network != "udp6" {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
				return fmt.Errorf("IP_PKTINFO: %w", err)
			}
		}
		if network != "udp4" {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
				return fmt.Errorf("IPV6_RECVPKTINFO: %w", err)
			}
		}
	}
	return nil
}

// joinGroup joins conn to the multicast group on the interface named
// ifname (the kernel's choice when ""); an IPv4 socket then receives only
// that group's datagrams (IP_MULTICAST_ALL off).
func joinGroup(conn *net.UDPConn, group netip.Addr, ifname string) error {
	var ifindex int
	if ifname != "" {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		ifindex = ifi.Index
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if group.Is4() {
			m := unix.IPMreqn{Multiaddr: group.As4(), Ifindex: int32(ifindex)}
			serr = unix.SetsockoptIPMreqn(int(fd), unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &m)
			if serr == nil { // only the joined group, not every group any socket joined
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0)
			}
			return
		}
		m := unix.IPv6Mreq{Multiaddr: group.As16(), Interface: uint32(ifindex)}
		serr = unix.SetsockoptIPv6Mreq(int(fd), unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, &m)
	})
	return errors.Join(err, serr)
}

// RcvBuf returns the socket's receive buffer size as the kernel reports it
// (twice the requested size, for its bookkeeping).
func (s *UDPSource) RcvBuf() (int, error) {
	var n int
	var serr error
	err := s.rc.Control(func(fd uintptr) { n, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	return n, errors.Join(err, serr)
}
