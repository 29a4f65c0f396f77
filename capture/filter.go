package capture

import (
	"fmt"
	"net/netip"
)

// PortRange is an inclusive range of ports; a single port has Lo == Hi.
type PortRange struct{ Lo, Hi uint16 }

// Port returns the range holding only p.
func Port(p uint16) PortRange { return PortRange{p, p} }

// maxPortRanges bounds each port list so the program stays small.
const maxPortRanges = 16

// Filter selects frames in the kernel. Zero fields match anything; set
// fields must all match (AND); a port matches when it is in any of the
// ranges (OR). The raw source compiles a Filter to an eBPF socket filter,
// so frames that do not match never reach user space nor the ring.
//
// VLAN ids are checked in the frame's tag or, when the NIC stripped the
// tag, in the kernel's VLAN metadata. IPv6 extension headers are not
// followed: with IPProto or ports set, an IPv6 packet matches only when its
// fixed header's next header is the protocol. IPv4 fragments other than
// the first carry no ports and do not match a port filter.
type Filter struct {
	// EtherType is the EtherType after VLAN tags (0x0800, 0x86dd, 0x88b5).
	EtherType uint16
	// VLAN is the VLAN id a frame must carry (1..4094); 0 = any.
	VLAN uint16
	// IPProto is the IP protocol (17 = UDP); 0 = any.
	IPProto uint8
	// SrcPorts and DstPorts list accepted UDP/TCP/SCTP ports; empty = any.
	// Either implies a protocol with ports.
	SrcPorts, DstPorts []PortRange
	// MulticastGroup, when valid, is the IP destination a packet must have.
	MulticastGroup netip.Addr
}

func (f *Filter) String() string {
	return fmt.Sprintf("ethertype=%#04x vlan=%d proto=%d sport=%v dport=%v group=%v",
		f.EtherType, f.VLAN, f.IPProto, f.SrcPorts, f.DstPorts, f.MulticastGroup)
}

// ipFamilies reports which IP versions the filter can accept, and whether
// it needs to look past the EtherType at all.
func (f *Filter) ipFamilies() (v4, v6, needIP bool) {
	needIP = f.IPProto != 0 || len(f.SrcPorts) > 0 || len(f.DstPorts) > 0 || f.MulticastGroup.IsValid()
	v4, v6 = true, true
	switch f.EtherType {
	case 0:
	case EtherTypeIPv4:
		v6 = false
	case EtherTypeIPv6:
		v4 = false
	default:
		v4, v6 = false, false
	}
	if g := f.MulticastGroup; g.IsValid() {
		v4, v6 = v4 && g.Is4(), v6 && g.Is6()
	}
	return v4, v6, needIP
}

// Validate reports why a filter cannot be compiled, or nil.
func (f *Filter) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFilter, f, fmt.Sprintf(format, a...))
	}
	if f.VLAN > 4094 {
		return bad("VLAN %d beyond 4094", f.VLAN)
	}
	if g := f.MulticastGroup; g.IsValid() && (!g.IsMulticast() || g.Zone() != "" || g.Is4In6()) {
		return bad("MulticastGroup %v is not a multicast address", g)
	}
	for _, rs := range [][]PortRange{f.SrcPorts, f.DstPorts} {
		if len(rs) > maxPortRanges {
			return bad("%d port ranges, at most %d", len(rs), maxPortRanges)
		}
		for _, r := range rs {
			if r.Lo > r.Hi {
				return bad("port range %d-%d is reversed", r.Lo, r.Hi)
			}
		}
	}
	if len(f.SrcPorts)+len(f.DstPorts) > 0 && f.IPProto != 0 && !hasPorts(f.IPProto) {
		return bad("IP protocol %d has no ports", f.IPProto)
	}
	if v4, v6, needIP := f.ipFamilies(); needIP && !v4 && !v6 {
		return bad("IP fields set but EtherType %#04x and group %v admit no IP version", f.EtherType, f.MulticastGroup)
	}
	return nil
}

func hasPorts(proto uint8) bool {
	return proto == IPProtoUDP || proto == IPProtoTCP || proto == ipProtoSCTP
}

const ipProtoSCTP = 132
