package capture

import (
	"encoding/binary"
	"net/netip"
)

// frameSpec describes a test frame; buildFrame renders it byte by byte the
// way the wire has it, independent of the parser under test.
type frameSpec struct {
	vlans      []uint16 // VLAN ids, outer first (0x8100 tags)
	etherType  uint16   // when not IP
	src, dst   netip.Addr
	proto      uint8 // default UDP
	sport      uint16
	dport      uint16
	payload    []byte
	ipv4Opts   int    // bytes of IPv4 options (multiple of 4)
	fragOff    uint16 // IPv4 fragment offset in 8-byte units
	pad        int    // Ethernet padding after the IP packet
	v6HopByHop bool
}

func buildFrame(s frameSpec) []byte {
	b := make([]byte, 12, 128)
	for i := range 12 {
		b[i] = byte(0x10 + i)
	}
	for _, v := range s.vlans {
		b = binary.BigEndian.AppendUint16(b, EtherTypeVLAN)
		b = binary.BigEndian.AppendUint16(b, 0x2000|v) // PCP 1
	}
	proto := s.proto
	if proto == 0 {
		proto = IPProtoUDP
	}
	var l4 []byte
	if proto == IPProtoUDP {
		l4 = binary.BigEndian.AppendUint16(l4, s.sport)
		l4 = binary.BigEndian.AppendUint16(l4, s.dport)
		l4 = binary.BigEndian.AppendUint16(l4, uint16(udpHeader+len(s.payload)))
		l4 = append(l4, 0, 0)
	}
	if proto == IPProtoTCP { // ports, then the rest of a 20-byte header
		l4 = binary.BigEndian.AppendUint16(l4, s.sport)
		l4 = binary.BigEndian.AppendUint16(l4, s.dport)
		l4 = append(l4, make([]byte, 16)...)
	}
	l4 = append(l4, s.payload...)
	switch {
	case !s.src.IsValid():
		b = binary.BigEndian.AppendUint16(b, s.etherType)
		b = append(b, s.payload...)
	case s.src.Is4():
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv4)
		hl := ipv4MinHeader + s.ipv4Opts
		b = append(b, 0x40|byte(hl/4), 0)
		b = binary.BigEndian.AppendUint16(b, uint16(hl+len(l4)))
		b = append(b, 0x12, 0x34)
		b = binary.BigEndian.AppendUint16(b, s.fragOff)
		b = append(b, 64, proto, 0, 0)
		b = append(b, s.src.AsSlice()...)
		b = append(b, s.dst.AsSlice()...)
		b = append(b, make([]byte, s.ipv4Opts)...)
		b = append(b, l4...)
	default:
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv6)
		b = append(b, 0x60, 0, 0, 0)
		ext := 0
		if s.v6HopByHop {
			ext = 8
		}
		b = binary.BigEndian.AppendUint16(b, uint16(ext+len(l4)))
		if s.v6HopByHop {
			b = append(b, ipv6HopByHop, 64)
		} else {
			b = append(b, proto, 64)
		}
		b = append(b, s.src.AsSlice()...)
		b = append(b, s.dst.AsSlice()...)
		if s.v6HopByHop {
			b = append(b, proto, 0, 1, 4, 0, 0, 0, 0) // PadN option
		}
		b = append(b, l4...)
	}
	return append(b, make([]byte, s.pad)...)
}
