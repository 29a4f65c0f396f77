//go:build !ecu

package capture

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// refMatch is the filter's meaning written plainly over the frame bytes,
// the oracle the eBPF program is checked against. Any read beyond the
// frame rejects it, as LD_ABS / LD_IND do. The frame has no VLAN metadata.
func refMatch(f *Filter, b []byte) bool {
	u8 := func(o int) (int, bool) {
		if o+1 > len(b) {
			return 0, false
		}
		return int(b[o]), true
	}
	u16 := func(o int) (int, bool) {
		if o+2 > len(b) {
			return 0, false
		}
		return int(binary.BigEndian.Uint16(b[o:])), true
	}
	u32 := func(o int) (uint32, bool) {
		if o+4 > len(b) {
			return 0, false
		}
		return binary.BigEndian.Uint32(b[o:]), true
	}
	et, ok := u16(12)
	if !ok {
		return false
	}
	l3 := 14
	if et == EtherTypeVLAN || et == EtherTypeQinQ {
		if f.VLAN != 0 {
			tci, ok := u16(14)
			if !ok || tci&0xfff != int(f.VLAN) {
				return false
			}
		}
		if et, ok = u16(16); !ok {
			return false
		}
		l3 = 18
		if et == EtherTypeVLAN || et == EtherTypeQinQ {
			if et, ok = u16(20); !ok {
				return false
			}
			l3 = 22
		}
	} else if f.VLAN != 0 {
		return false // no metadata here
	}
	if f.EtherType != 0 && et != int(f.EtherType) {
		return false
	}
	v4, v6, needIP := f.ipFamilies()
	if !needIP {
		return true
	}
	ports := len(f.SrcPorts)+len(f.DstPorts) > 0
	var l4, proto int
	switch {
	case et == EtherTypeIPv4 && v4:
		ihl, ok := u8(l3)
		if !ok || ihl&0xf < 5 {
			return false
		}
		l4 = l3 + (ihl&0xf)*4
		if proto, ok = u8(l3 + 9); !ok {
			return false
		}
	case et == EtherTypeIPv6 && v6:
		l4 = l3 + 40
		if proto, ok = u8(l3 + 6); !ok {
			return false
		}
	default:
		return false
	}
	if f.IPProto != 0 && proto != int(f.IPProto) || f.IPProto == 0 && ports && !hasPorts(uint8(proto)) {
		return false
	}
	if g := f.MulticastGroup; g.IsValid() {
		a := g.AsSlice()
		off := l3 + 16
		if et == EtherTypeIPv6 {
			off = l3 + 24
		}
		for w := 0; w < len(a); w += 4 {
			v, ok := u32(off + w)
			if !ok || v != binary.BigEndian.Uint32(a[w:]) {
				return false
			}
		}
	}
	if ports && et == EtherTypeIPv4 {
		fo, ok := u16(l3 + 6)
		if !ok || fo&0x1fff != 0 {
			return false
		}
	}
	in := func(off int, rs []PortRange) bool {
		if len(rs) == 0 {
			return true
		}
		p, ok := u16(off)
		return ok && slices.ContainsFunc(rs, func(r PortRange) bool { return p >= int(r.Lo) && p <= int(r.Hi) })
	}
	return in(l4, f.SrcPorts) && in(l4+2, f.DstPorts)
}

// runFilter runs the compiled program over frame with BPF_PROG_TEST_RUN.
// The test run strips an Ethernet header before running a socket filter,
// so a dummy one is put in front: the program then sees frame from its
// first byte, as on a packet socket.
func runFilter(t *testing.T, prog *ebpf.Program, frame []byte) bool {
	t.Helper()
	ret, err := prog.Run(&ebpf.RunOptions{Data: append(make([]byte, ethernetHeader), frame...)})
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	return ret != 0
}

func TestFilterProgram(t *testing.T) {
	pl := []byte("payload!")
	someip := frameSpec{src: ip4a, dst: ip4b, sport: 30501, dport: 30490, payload: pl}
	tagged := someip
	tagged.vlans = []uint16{42}
	qinq := someip
	qinq.vlans = []uint16{5, 42}
	v6 := frameSpec{src: ip6a, dst: ip6b, sport: 7410, dport: 7400, payload: pl}
	opts := someip
	opts.ipv4Opts = 8
	frag := someip
	frag.fragOff = 10
	tcp := someip
	tcp.proto = IPProtoTCP
	arp := frameSpec{etherType: EtherTypeARP, payload: make([]byte, 28)}
	frames := map[string][]byte{
		"someip": buildFrame(someip), "tagged": buildFrame(tagged), "qinq": buildFrame(qinq),
		"v6": buildFrame(v6), "opts": buildFrame(opts), "frag": buildFrame(frag),
		"tcp": buildFrame(tcp), "arp": buildFrame(arp), "short": buildFrame(someip)[:14+20+1],
	}
	all := []string{"someip", "tagged", "qinq", "v6", "opts", "frag", "tcp", "arp", "short"}
	cases := []struct {
		name  string
		f     Filter
		match []string
	}{
		{"everything", Filter{}, all},
		{"ipv4", Filter{EtherType: EtherTypeIPv4}, []string{"someip", "tagged", "qinq", "opts", "frag", "tcp", "short"}},
		{"arp", Filter{EtherType: EtherTypeARP}, []string{"arp"}},
		{"vlan 42", Filter{VLAN: 42}, []string{"tagged"}},
		{"vlan 5 (outer)", Filter{VLAN: 5}, []string{"qinq"}},
		{"udp", Filter{IPProto: IPProtoUDP}, []string{"someip", "tagged", "qinq", "v6", "opts", "frag", "short"}},
		{"someip port", Filter{DstPorts: []PortRange{Port(30490)}}, []string{"someip", "tagged", "qinq", "opts", "tcp"}},
		{"udp someip port", Filter{IPProto: IPProtoUDP, DstPorts: []PortRange{Port(30490)}}, []string{"someip", "tagged", "qinq", "opts"}},
		{"dds range", Filter{DstPorts: []PortRange{{7400, 7500}}}, []string{"v6"}},
		{"src range", Filter{SrcPorts: []PortRange{{1, 2}, {30500, 30502}}}, []string{"someip", "tagged", "qinq", "opts", "tcp"}},
		{"group v4", Filter{MulticastGroup: ip4b}, []string{"someip", "tagged", "qinq", "opts", "frag", "tcp", "short"}},
		{"group v6", Filter{MulticastGroup: ip6b, IPProto: IPProtoUDP}, []string{"v6"}},
		{"other group", Filter{MulticastGroup: netip.MustParseAddr("239.9.9.9")}, nil},
		{"vlan+group+port", Filter{VLAN: 42, MulticastGroup: ip4b, DstPorts: []PortRange{Port(30490)}, IPProto: IPProtoUDP}, []string{"tagged"}},
	}
	for _, c := range cases {
		prog, err := loadFilter(&c.f)
		testutil.SkipIfNotSupported(t, err) // needs CAP_BPF
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range all {
			want := slices.Contains(c.match, name)
			if ref := refMatch(&c.f, frames[name]); ref != want {
				t.Errorf("%s / %s: reference says %v, table says %v", c.name, name, ref, want)
			}
			if got := runFilter(t, prog, frames[name]); got != want {
				t.Errorf("%s / %s: program says %v, want %v", c.name, name, got, want)
			}
		}
		prog.Close()
	}
}

// TestFilterProgramRandom checks the program against the reference over
// random filters and random, often truncated or corrupted, frames.
func TestFilterProgramRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...uint16) uint16 { return vs[rng.IntN(len(vs))] }
	ranges := func() []PortRange {
		var rs []PortRange
		for range rng.IntN(3) {
			lo := pick(0, 1, 7400, 30490, 30501)
			rs = append(rs, PortRange{lo, lo + pick(0, 1, 100)})
		}
		return rs
	}
	addrs := []netip.Addr{ip4a, ip4b, ip6a, ip6b}
	for i := range 60 {
		f := Filter{
			EtherType: pick(0, 0, EtherTypeIPv4, EtherTypeIPv6, EtherTypeARP),
			VLAN:      pick(0, 0, 0, 42),
			IPProto:   uint8(pick(0, 0, IPProtoUDP, IPProtoTCP)),
			SrcPorts:  ranges(),
			DstPorts:  ranges(),
		}
		if rng.IntN(3) == 0 {
			f.MulticastGroup = addrs[1+2*rng.IntN(2)]
		}
		if f.Validate() != nil {
			continue
		}
		prog, err := loadFilter(&f)
		testutil.SkipIfNotSupported(t, err) // needs CAP_BPF
		if err != nil {
			t.Fatal(err)
		}
		for j := range 200 {
			src := addrs[rng.IntN(4)]
			dst := addrs[rng.IntN(2)*2+1]
			if src.Is4() != dst.Is4() {
				dst = addrs[rng.IntN(2)+map[bool]int{true: 0, false: 2}[src.Is4()]]
			}
			s := frameSpec{src: src, dst: dst, sport: pick(1, 7400, 30501), dport: pick(2, 7450, 30490),
				proto: uint8(pick(IPProtoUDP, IPProtoTCP, 1)), payload: make([]byte, rng.IntN(40)),
				ipv4Opts: 4 * rng.IntN(3), fragOff: pick(0, 0, 0x2000, 3), v6HopByHop: rng.IntN(4) == 0}
			if rng.IntN(3) == 0 {
				s.vlans = []uint16{pick(1, 42)}
			}
			fr := buildFrame(s)
			if rng.IntN(3) == 0 {
				fr = fr[:rng.IntN(len(fr)+1)]
			}
			if len(fr) > 0 && rng.IntN(4) == 0 {
				fr[rng.IntN(len(fr))] = byte(rng.Uint32())
			}
			if want, got := refMatch(&f, fr), runFilter(t, prog, fr); got != want {
				t.Fatalf("filter %d (%s), frame %d %x: program %v, reference %v", i, &f, j, fr, got, want)
			}
		}
		prog.Close()
	}
}

func TestFilterValidate(t *testing.T) {
	bad := []Filter{
		{VLAN: 4095},
		{MulticastGroup: ip4a},
		{SrcPorts: []PortRange{{10, 9}}},
		{DstPorts: make([]PortRange, maxPortRanges+1)},
		{IPProto: 1, DstPorts: []PortRange{Port(1)}},
		{EtherType: EtherTypeARP, IPProto: IPProtoUDP},
		{EtherType: EtherTypeIPv6, MulticastGroup: ip4b},
	}
	for _, f := range bad {
		if _, err := filterProgram(&f); !errors.Is(err, ErrFilter) {
			t.Errorf("filterProgram(%s) = %v, want ErrFilter", &f, err)
		}
	}
}
