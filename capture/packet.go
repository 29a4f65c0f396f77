package capture

import (
	"encoding/binary"
	"net/netip"
)

// EtherType values the parser and the filter know.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeARP    = 0x0806
	EtherTypeVLAN   = 0x8100 // IEEE 802.1Q
	EtherTypeQinQ   = 0x88a8 // IEEE 802.1ad service tag
	EtherTypeIPv6   = 0x86dd
	IPProtoTCP      = 6
	IPProtoUDP      = 17
	ethernetHeader  = 14
	vlanTag         = 4
	ipv4MinHeader   = 20
	ipv6Header      = 40
	udpHeader       = 8
	maxVLANTags     = 2
	maxIPv6ExtHdrs  = 8
	ipv6HopByHop    = 0
	ipv6Routing     = 43
	ipv6Fragment    = 44
	ipv6DestOptions = 60
)

// Packet is the parsed view of one packet's headers. The zero value is an
// empty packet; layers that are absent leave their fields zero.
//
// Payload and Frame alias the bytes the packet was parsed from: they are
// valid only as long as those bytes are (for a source, until the sink call
// returns). A Packet is not safe for concurrent use.
type Packet struct {
	// Frame is the whole frame as received (Ethernet header first), or nil
	// for packets from a UDP socket.
	Frame []byte
	// Payload is the UDP payload (trimmed to the UDP length) when HasUDP,
	// else nil.
	Payload []byte
	// Src and Dst are the IP addresses; invalid when IPVersion is 0.
	Src, Dst netip.Addr
	// EtherType is the type after any VLAN tags (0x0800 for IPv4).
	EtherType uint16
	// EtherPayload is what follows the EtherType (after any VLAN tags),
	// Ethernet padding included; nil for packets from a UDP socket.
	EtherPayload []byte
	// VLAN is the 12-bit id of the outer VLAN tag when HasVLAN.
	VLAN uint16
	// SrcPort and DstPort are the UDP ports when HasUDP.
	SrcPort, DstPort uint16
	// IPVersion is 4, 6, or 0 when the packet is not IP.
	IPVersion uint8
	// IPProto is the IPv4 protocol or the IPv6 upper-layer next header.
	IPProto uint8
	// HasVLAN is set when a VLAN tag was in the frame or reported by the
	// kernel (a tag stripped by the NIC).
	HasVLAN bool
	// HasUDP is set when a whole UDP header follows an unfragmented IP
	// header (or a first fragment, whose ports are present).
	HasUDP bool
}

// ParseFrame parses the Ethernet, VLAN, IPv4/IPv6 and UDP headers of frame
// into p. Every length is checked against the frame: a frame too short for
// a header its predecessor announces yields an error wrapping ErrTruncated,
// contradictory fields one wrapping ErrMalformed. On error p is reset to
// the zero Packet. Frames that are not IP, or IP that is not UDP, are not
// errors: the deeper fields just stay zero. Ethernet padding after the IP
// total length is not part of Payload. ParseFrame does not allocate.
func ParseFrame(frame []byte, p *Packet) error {
	*p = Packet{Frame: frame}
	if len(frame) < ethernetHeader {
		*p = Packet{}
		return errEthernetShort
	}
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	off += 2
	for i := 0; i < maxVLANTags && (et == EtherTypeVLAN || et == EtherTypeQinQ); i++ {
		if len(frame) < off+vlanTag {
			*p = Packet{}
			return errVLANShort
		}
		if !p.HasVLAN {
			p.HasVLAN = true
			p.VLAN = binary.BigEndian.Uint16(frame[off:]) & 0x0fff
		}
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += vlanTag
	}
	p.EtherType = et
	p.EtherPayload = frame[off:]
	var err error
	switch et {
	case EtherTypeIPv4:
		err = p.parseIPv4(frame[off:])
	case EtherTypeIPv6:
		err = p.parseIPv6(frame[off:])
	}
	if err != nil {
		*p = Packet{}
	}
	return err
}

// ParseIP parses a packet that starts at its IPv4 or IPv6 header (as read
// from a cooked or layer-3 socket). The rules are those of ParseFrame.
func ParseIP(b []byte, p *Packet) error {
	*p = Packet{}
	if len(b) == 0 {
		return errIPv4Short
	}
	var err error
	switch b[0] >> 4 {
	case 4:
		p.EtherType = EtherTypeIPv4
		err = p.parseIPv4(b)
	case 6:
		p.EtherType = EtherTypeIPv6
		err = p.parseIPv6(b)
	default:
		err = errIPv4Version
	}
	if err != nil {
		*p = Packet{}
	}
	return err
}

func (p *Packet) parseIPv4(b []byte) error {
	if len(b) < ipv4MinHeader {
		return errIPv4Short
	}
	if b[0]>>4 != 4 {
		return errIPv4Version
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < ipv4MinHeader {
		return errIPv4IHL
	}
	if len(b) < ihl {
		return errIPv4Short
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total < ihl {
		return errIPv4Total
	}
	if total > len(b) {
		return errIPv4Body
	}
	b = b[:total] // drop Ethernet padding
	p.IPVersion = 4
	p.IPProto = b[9]
	p.Src = netip.AddrFrom4([4]byte(b[12:16]))
	p.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	fragOff := binary.BigEndian.Uint16(b[6:]) & 0x1fff
	if fragOff != 0 || p.IPProto != IPProtoUDP {
		return nil
	}
	return p.parseUDP(b[ihl:], binary.BigEndian.Uint16(b[6:])&0x2000 != 0)
}

func (p *Packet) parseIPv6(b []byte) error {
	if len(b) < ipv6Header {
		return errIPv6Short
	}
	if b[0]>>4 != 6 {
		return errIPv6Version
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	if ipv6Header+plen > len(b) {
		return errIPv6Body
	}
	p.IPVersion = 6
	p.Src = netip.AddrFrom16([16]byte(b[8:24]))
	p.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	next := b[6]
	b = b[ipv6Header : ipv6Header+plen]
	fragmented := false
	for i := 0; ; i++ {
		if i == maxIPv6ExtHdrs {
			return errIPv6ExtMany
		}
		switch next {
		case ipv6HopByHop, ipv6Routing, ipv6DestOptions:
			if len(b) < 8 {
				return errIPv6Ext
			}
			n := (int(b[1]) + 1) * 8
			if len(b) < n {
				return errIPv6Ext
			}
			next, b = b[0], b[n:]
			continue
		case ipv6Fragment:
			if len(b) < 8 {
				return errIPv6Ext
			}
			fo := binary.BigEndian.Uint16(b[2:])
			next, b = b[0], b[8:]
			if fo&0xfff8 != 0 { // not the first fragment: no upper header
				p.IPProto = next
				return nil
			}
			fragmented = fo&1 != 0
			continue
		}
		break
	}
	p.IPProto = next
	if next != IPProtoUDP {
		return nil
	}
	return p.parseUDP(b, fragmented)
}

// parseUDP parses the UDP header at the start of b, the IP payload. In a
// first fragment the UDP length may exceed what is present; the payload is
// then what this fragment carries.
func (p *Packet) parseUDP(b []byte, fragmented bool) error {
	if len(b) < udpHeader {
		return errUDPShort
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n < udpHeader {
		return errUDPLength
	}
	if n > len(b) {
		if !fragmented {
			return errUDPBody
		}
		n = len(b)
	}
	p.HasUDP = true
	p.SrcPort = binary.BigEndian.Uint16(b[0:])
	p.DstPort = binary.BigEndian.Uint16(b[2:])
	p.Payload = b[udpHeader:n]
	return nil
}
