package capture

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

var (
	ip4a = netip.MustParseAddr("10.1.2.3")
	ip4b = netip.MustParseAddr("239.1.2.3")
	ip6a = netip.MustParseAddr("fd00::1")
	ip6b = netip.MustParseAddr("ff02::1:3")
)

func TestParseFrame(t *testing.T) {
	pl := []byte("hello, edr")
	udp4 := frameSpec{src: ip4a, dst: ip4b, sport: 4000, dport: 30490, payload: pl}
	f := func(name string, frame []byte, want Packet) {
		t.Helper()
		var p Packet
		if err := ParseFrame(frame, &p); err != nil {
			t.Fatalf("%s: ParseFrame: %v", name, err)
		}
		if !bytes.Equal(p.Frame, frame) {
			t.Errorf("%s: Frame does not alias the input", name)
		}
		if !bytes.Equal(p.Payload, want.Payload) {
			t.Errorf("%s: Payload = %q, want %q", name, p.Payload, want.Payload)
		}
		if headerFields(p) != headerFields(want) {
			t.Errorf("%s: got %+v\nwant %+v", name, p, want)
		}
	}
	wantUDP4 := Packet{Payload: pl, Src: ip4a, Dst: ip4b, EtherType: EtherTypeIPv4, SrcPort: 4000, DstPort: 30490, IPVersion: 4, IPProto: IPProtoUDP, HasUDP: true}
	f("ipv4 udp", buildFrame(udp4), wantUDP4)

	s := udp4
	s.pad = 18 // minimum-size frames carry padding that is not payload
	f("ipv4 udp padded", buildFrame(s), wantUDP4)

	s = udp4
	s.ipv4Opts = 8
	f("ipv4 options", buildFrame(s), wantUDP4)

	s = udp4
	s.vlans = []uint16{42}
	w := wantUDP4
	w.HasVLAN, w.VLAN = true, 42
	f("vlan", buildFrame(s), w)

	s.vlans = []uint16{7, 42}
	w.VLAN = 7
	f("qinq keeps the outer id", buildFrame(s), w)

	s = udp4
	s.fragOff = 100
	f("ipv4 later fragment has no ports", buildFrame(s), Packet{Src: ip4a, Dst: ip4b, EtherType: EtherTypeIPv4, IPVersion: 4, IPProto: IPProtoUDP})

	s = udp4
	s.proto = IPProtoTCP
	f("ipv4 tcp", buildFrame(s), Packet{Src: ip4a, Dst: ip4b, EtherType: EtherTypeIPv4, IPVersion: 4, IPProto: IPProtoTCP})

	s = frameSpec{src: ip6a, dst: ip6b, sport: 1, dport: 65535, payload: pl}
	w6 := Packet{Payload: pl, Src: ip6a, Dst: ip6b, EtherType: EtherTypeIPv6, SrcPort: 1, DstPort: 65535, IPVersion: 6, IPProto: IPProtoUDP, HasUDP: true}
	f("ipv6 udp", buildFrame(s), w6)
	s.v6HopByHop = true
	f("ipv6 hop-by-hop udp", buildFrame(s), w6)

	f("arp", buildFrame(frameSpec{etherType: EtherTypeARP, payload: make([]byte, 28)}), Packet{EtherType: EtherTypeARP})
	f("empty udp payload", buildFrame(frameSpec{src: ip4a, dst: ip4b, sport: 1, dport: 2}),
		Packet{Payload: []byte{}, Src: ip4a, Dst: ip4b, EtherType: EtherTypeIPv4, SrcPort: 1, DstPort: 2, IPVersion: 4, IPProto: IPProtoUDP, HasUDP: true})
}

func TestParseFrameErrors(t *testing.T) {
	good := buildFrame(frameSpec{src: ip4a, dst: ip4b, sport: 1, dport: 2, payload: []byte("abcdefgh")})
	good6 := buildFrame(frameSpec{src: ip6a, dst: ip6b, sport: 1, dport: 2, payload: []byte("abcdefgh")})
	vlan := buildFrame(frameSpec{vlans: []uint16{3}, src: ip4a, dst: ip4b, sport: 1, dport: 2})
	mod := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	f := func(name string, frame []byte, want error) {
		t.Helper()
		p := Packet{SrcPort: 99, HasUDP: true}
		err := ParseFrame(frame, &p)
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", name, err, want)
		}
		if p.Frame != nil || p.Payload != nil || headerFields(p) != (headerFields(Packet{})) {
			t.Errorf("%s: partial result %+v left after error", name, p)
		}
	}
	f("empty", nil, ErrTruncated)
	f("short ethernet", good[:13], ErrTruncated)
	f("short vlan", vlan[:16], ErrTruncated)
	f("short ipv4", good[:14+19], ErrTruncated)
	f("ipv4 version", mod(good, 14, 0x55), ErrMalformed)
	f("ipv4 ihl", mod(good, 14, 0x44), ErrMalformed)
	f("ipv4 ihl beyond frame", mod(good[:14+24], 14, 0x4f), ErrTruncated)
	f("ipv4 total below ihl", mod(mod(good, 16, 0), 17, 10), ErrMalformed)
	f("ipv4 total beyond frame", good[:len(good)-1], ErrTruncated)
	f("udp short", mod(mod(good, 16, 0), 17, 20+7), ErrTruncated)
	f("udp length below 8", mod(good, 14+20+5, 7), ErrMalformed)
	f("udp length beyond ip", mod(good, 14+20+5, 17), ErrTruncated)
	f("short ipv6", good6[:14+39], ErrTruncated)
	f("ipv6 version", mod(good6, 14, 0x40), ErrMalformed)
	f("ipv6 payload beyond frame", good6[:len(good6)-1], ErrTruncated)
	f("ipv6 udp length 0", mod(mod(good6, 14+40+4, 0), 14+40+5, 0), ErrMalformed)
}

// header is Packet without its slices, so it compares with ==.
type header struct {
	src, dst                          netip.Addr
	etherType, vlan, srcPort, dstPort uint16
	ipVersion, ipProto                uint8
	hasVLAN, hasUDP                   bool
}

func headerFields(p Packet) header {
	return header{p.Src, p.Dst, p.EtherType, p.VLAN, p.SrcPort, p.DstPort, p.IPVersion, p.IPProto, p.HasVLAN, p.HasUDP}
}
