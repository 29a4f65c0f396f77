package capture

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"golang.org/x/sys/unix"
)

func listenUDP(t testing.TB, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newRaw(t testing.TB, o RawOptions, sink ingest.Sink) *RawSource {
	t.Helper()
	src, err := NewRaw(o, sink)
	testutil.SkipIfNotSupported(t, err) // needs CAP_NET_RAW (and CAP_BPF for a filter)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestRawLoopback captures real UDP traffic on the loopback interface of a
// private namespace, recording UDP payloads under udp/{dst}:{dport}, with
// kernel timestamps as capture times.
func TestRawLoopback(t *testing.T) {
	ns := newNetns(t)
	sink := newRecordingSink()
	var src *RawSource
	var rx, tx *net.UDPConn
	ns.do(func() {
		src = newRaw(t, RawOptions{Interface: "lo", Topic: "udp/{dst}:{dport}", Payload: PayloadUDP, BlockSize: 1 << 16, Blocks: 4}, sink)
		rx = listenUDP(t, "127.0.0.1:0")
		tx = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	stop := runSource(t, src.Run, src.Close)
	before := time.Now().UnixNano()
	sizes := []int{0, 1, 63, 64, 1400, 9000, 30000}
	for i, n := range sizes {
		if _, err := tx.Write(payloadFor(1, i, n)); err != nil {
			t.Fatal(err)
		}
	}
	recs := sink.waitRecords(t, len(sizes))
	after := time.Now().UnixNano()
	if err := stop(); err != nil {
		t.Errorf("Run after Close = %v", err)
	}
	topic := fmt.Sprintf("udp/127.0.0.1:%d", rx.LocalAddr().(*net.UDPAddr).Port)
	for i, r := range recs {
		if r.topic != topic || !bytes.Equal(r.payload, payloadFor(1, i, sizes[i])) {
			t.Errorf("record %d: topic %q, %d bytes; want %q, %d bytes as sent", i, r.topic, len(r.payload), topic, sizes[i])
		}
		if r.captureNs < before || r.captureNs > after {
			t.Errorf("record %d: capture time %d outside [%d, %d]: not a kernel receive time", i, r.captureNs, before, after)
		}
	}
	st := src.Stats()
	n := uint64(len(sizes))
	if st.Packets != n || st.Ingested != n || st.KernelPackets != n || st.Lost != 0 || st.Topics != 1 {
		t.Errorf("Stats %+v, want %d packets, all ingested, none lost", st, n)
	}
	if sink.infos[0].Source != "raw:lo" || sink.offline[topic] != 1 {
		t.Errorf("TopicInfo %+v, offline %v", sink.infos[0], sink.offline)
	}
}

// TestRawWholeFrames records whole frames and checks them bit-exact
// against the headers the kernel built for the datagram sent.
func TestRawWholeFrames(t *testing.T) {
	ns := newNetns(t)
	sink := newRecordingSink()
	var src *RawSource
	var rx, tx *net.UDPConn
	ns.do(func() {
		src = newRaw(t, RawOptions{Interface: "lo", Topic: "eth/{ethertype}", BlockTimeout: time.Millisecond, BlockSize: 1 << 16}, sink)
		rx = listenUDP(t, "127.0.0.1:0")
		tx = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	stop := runSource(t, src.Run, src.Close)
	defer stop()
	msg := []byte("whole frame, please")
	if _, err := tx.Write(msg); err != nil {
		t.Fatal(err)
	}
	r := sink.waitRecords(t, 1)[0]
	var p Packet
	if err := ParseFrame(r.payload, &p); err != nil {
		t.Fatalf("recorded frame does not parse: %v", err)
	}
	want := buildFrame(frameSpec{src: netip.MustParseAddr("127.0.0.1"), dst: netip.MustParseAddr("127.0.0.1"),
		sport: tx.LocalAddr().(*net.UDPAddr).AddrPort().Port(), dport: rx.LocalAddr().(*net.UDPAddr).AddrPort().Port(), payload: msg})
	if r.topic != "eth/0x0800" || len(r.payload) != len(want) || !bytes.Equal(p.Payload, msg) ||
		!bytes.Equal(r.payload[:12], make([]byte, 12)) || !bytes.Equal(r.payload[12:14], want[12:14]) ||
		!bytes.Equal(r.payload[14+12:14+20+4], want[14+12:14+20+4]) {
		t.Errorf("frame %q on %q\nwant %q on eth/0x0800 (up to checksums and ids)", r.payload, r.topic, want)
	}
}

// injectFrames sends n VLAN-42-tagged UDP frames to 10.99.0.1:30490 out
// of ifname through an AF_PACKET socket, payload {tag, i}.
func injectFrames(t *testing.T, ifname string, n int, tag byte) {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	testutil.SkipIfNotSupported(t, err) // needs CAP_NET_RAW to inject frames
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		fr := buildFrame(frameSpec{vlans: []uint16{42}, src: netip.MustParseAddr("10.99.0.2"), dst: netip.MustParseAddr("10.99.0.1"),
			sport: 5555, dport: 30490, payload: []byte{tag, byte(i)}})
		if _, err := unix.Write(fd, fr); err != nil {
			t.Fatal(err)
		}
	}
}

// countTopics waits until the sink holds at least n records and returns how
// many each topic got.
func countTopics(t *testing.T, sink *recordingSink, n int) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, r := range sink.waitRecords(t, n) {
		m[r.topic]++
	}
	return m
}

// TestRawFilterVeth sends matching and non-matching traffic over a veth pair
// between two private namespaces. A filtered and an unfiltered raw source
// watch the same interface: the filtered socket's kernel packet count
// (PACKET_STATISTICS) equals the matching packets, so the rest was dropped
// in the kernel, while the unfiltered one saw everything. VLAN ids come
// from the kernel's metadata (veth strips the tag), multicast groups from
// the IP header.
func TestRawFilterVeth(t *testing.T) {
	if !KernelFilterBuilt {
		t.Skip("the ECU build has no kernel filter (filter_ecu.go; TestProbeRaw checks its refusal)")
	}
	a, b := vethPair(t)
	b.ip("route add 224.0.0.0/4 dev vb")

	type watcher struct {
		name string
		opts RawOptions
		sink *recordingSink
		src  *RawSource
	}
	ws := []*watcher{
		{name: "all", opts: RawOptions{Topic: "eth/{ethertype}"}},
		{name: "someip", opts: RawOptions{Topic: "someip/{dport}", Payload: PayloadUDP,
			Filter: &Filter{IPProto: IPProtoUDP, DstPorts: []PortRange{Port(30490)}}}},
		{name: "vlan", opts: RawOptions{Topic: "vlan{vlan}/{dport}", Payload: PayloadUDP, Filter: &Filter{VLAN: 42}}},
		{name: "group", opts: RawOptions{Topic: "udp/{dst}:{dport}", Payload: PayloadUDP,
			Filter: &Filter{MulticastGroup: netip.MustParseAddr("239.1.2.3")}}},
	}
	var udpSrc *UDPSource
	udpSink := newRecordingSink()
	a.do(func() {
		for _, w := range ws {
			w.opts.Interface = "va"
			w.opts.BlockTimeout = time.Millisecond
			w.opts.BlockSize = 1 << 16
			// Blocks retire every millisecond, most holding a frame or
			// two: 64 of them, so a reader slowed by -race on a loaded
			// machine does not fall 4 blocks behind and lose frames
			// (CI's run of a851206: 270 of 290).
			w.opts.Blocks = 64
			w.sink = newRecordingSink()
			w.src = newRaw(t, w.opts, w.sink)
		}
		listenUDP(t, "10.99.0.1:30490")
		listenUDP(t, "10.99.0.1:40000")
		var err error
		udpSrc, err = NewUDP(UDPOptions{Addr: "239.1.2.3:30490", Interface: "va", Topic: "mc/{dst}"}, udpSink)
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, w := range ws {
		defer runSource(t, w.src.Run, w.src.Close)()
	}
	defer runSource(t, udpSrc.Run, udpSrc.Close)()

	const other, someip, tagged, group, otherGroup = 200, 50, 20, 10, 10
	send := func(to string, n int, tag byte) { sendTagged(t, b, to, n, tag) }
	send("10.99.0.1:40000", other, 'o')
	send("239.1.2.4:30490", otherGroup, 'x')
	// Tagged frames are injected whole (this kernel may lack 802.1Q
	// devices); va's receive path moves the tag into metadata, as a NIC
	// with VLAN offload does.
	b.do(func() { injectFrames(t, "vb", tagged, 'v') })
	send("239.1.2.3:30490", group, 'g')
	send("10.99.0.1:30490", someip, 's')

	// Wait for everything to have crossed the veth before reading counts.
	n := other + otherGroup + tagged + group + someip
	got := ws[0].sink.records()
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); {
		got = ws[0].sink.waitRecordsFor(100 * time.Millisecond)
	}
	if len(got) < n { // with the source's stats: lost in the ring, or never sent
		t.Fatalf("unfiltered source: %d records, want %d; its stats %+v", len(got), n, ws[0].src.Stats())
	}
	all := countTopics(t, ws[0].sink, n)
	if all["eth/0x0800"] < other+otherGroup+tagged+group+someip {
		t.Errorf("unfiltered source saw %v", all)
	}
	f := func(w *watcher, want map[string]int) {
		t.Helper()
		total := 0
		for _, n := range want {
			total += n
		}
		got := countTopics(t, w.sink, total)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: topics %v, want %v", w.name, got, want)
		}
		// The source's counters are added after each block reaches the sink.
		var st Stats
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if st = w.src.Stats(); st.Ingested >= uint64(total) || time.Now().After(deadline) {
				break
			}
		}
		if st.KernelPackets != uint64(total) || st.Ingested != uint64(total) || st.Lost != 0 {
			t.Errorf("%s: Stats %+v: the kernel passed %d packets to the socket, want exactly the %d matching",
				w.name, st, st.KernelPackets, total)
		}
		for _, r := range w.sink.records() {
			if len(r.payload) != 2 {
				t.Errorf("%s: payload %q, want the 2 bytes sent", w.name, r.payload)
			}
		}
	}
	f(ws[1], map[string]int{"someip/30490": someip + tagged + group + otherGroup})
	f(ws[2], map[string]int{"vlan42/30490": tagged})
	f(ws[3], map[string]int{"udp/239.1.2.3:30490": group})
	if st := ws[0].src.Stats(); st.KernelPackets < uint64(other+someip+tagged+group+otherGroup) {
		t.Errorf("unfiltered socket counted %d packets", st.KernelPackets)
	}
	mc := countTopics(t, udpSink, group)
	if mc["mc/239.1.2.3"] != group || len(mc) != 1 {
		t.Errorf("multicast UDP source got %v, want %d on mc/239.1.2.3", mc, group)
	}
	t.Logf("unfiltered socket: %+v", ws[0].src.Stats())
	t.Logf("someip filter:     %+v", ws[1].src.Stats())
}

func TestNewRawErrors(t *testing.T) {
	for _, o := range []RawOptions{
		{},
		{Interface: "lo", BlockSize: 1000},
		{Interface: "lo", Blocks: -1},
		{Interface: "lo", BlockTimeout: time.Microsecond},
		{Interface: "lo", Topic: "{nope}"},
		{Interface: "lo", Payload: 7},
	} {
		if _, err := NewRaw(o, newRecordingSink()); !errors.Is(err, ErrOptions) && !errors.Is(err, ErrTemplate) {
			t.Errorf("NewRaw(%+v) = %v, want ErrOptions or ErrTemplate", o, err)
		}
	}
	if _, err := NewRaw(RawOptions{Interface: "no-such-if0"}, newRecordingSink()); err == nil {
		t.Error("NewRaw on a missing interface succeeded")
	}
	_, err := NewRaw(RawOptions{Interface: "lo", Filter: &Filter{VLAN: 5000}}, newRecordingSink())
	// The filter is checked once the socket is open: without CAP_NET_RAW
	// the error is EPERM.
	testutil.SkipIfNotSupported(t, err)
	if !errors.Is(err, ErrFilter) {
		t.Errorf("NewRaw with a bad filter = %v, want ErrFilter", err)
	}
}

// TestRawRingOverflow fills a one-block ring while nobody reads it: the
// kernel counts the frames it had no room for, and they surface as Lost.
func TestRawRingOverflow(t *testing.T) {
	ns := newNetns(t)
	sink := newRecordingSink()
	var src *RawSource
	var tx *net.UDPConn
	ns.do(func() {
		src = newRaw(t, RawOptions{Interface: "lo", Topic: "all", Payload: PayloadUDP, BlockSize: 4096, Blocks: 1, BlockTimeout: time.Millisecond}, sink)
		rx := listenUDP(t, "127.0.0.1:0")
		tx = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	const sent = 100
	for i := range sent {
		if _, err := tx.Write(payloadFor(4, i, 500)); err != nil {
			t.Fatal(err)
		}
	}
	// Delivery runs in softirq context, which a loaded machine may defer.
	var st Stats
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st = src.Stats(); st.KernelPackets >= sent || time.Now().After(deadline) {
			break
		}
	}
	if st.KernelPackets != sent || st.Lost == 0 || st.Lost >= sent {
		t.Fatalf("before Run: Stats %+v, want %d kernel packets, some lost", st, sent)
	}
	stop := runSource(t, src.Run, src.Close)
	sink.waitRecords(t, int(sent-st.Lost))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st = src.Stats()
	if st.Ingested+st.Lost != sent {
		t.Errorf("Stats %+v: ingested %d + lost %d != sent %d", st, st.Ingested, st.Lost, sent)
	}
}

// TestRawOptionsOnInterface checks promiscuous mode is set while the source
// is open and cleared by Close, and that Outgoing adds the frames the host
// sends (on loopback every frame is both sent and received).
func TestRawOptionsOnInterface(t *testing.T) {
	ns := newNetns(t)
	// A packet socket raises the device's promiscuity count, which
	// netlink reports (SIOCGIFFLAGS shows only the administrative flag).
	promisc := func() bool {
		out, err := exec.Command("ip", "-n", ns.name, "-d", "link", "show", "lo").CombinedOutput()
		if err != nil {
			t.Fatalf("ip link show: %v: %s", err, out)
		}
		return !bytes.Contains(out, []byte("promiscuity 0"))
	}
	if promisc() {
		t.Fatal("lo promiscuous before the test")
	}
	sink := newRecordingSink()
	var src *RawSource
	var tx *net.UDPConn
	ns.do(func() {
		src = newRaw(t, RawOptions{Interface: "lo", Promiscuous: true, Outgoing: true, Topic: "x", BlockTimeout: time.Millisecond, BlockSize: 1 << 16}, sink)
		rx := listenUDP(t, "127.0.0.1:0")
		tx = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	if !promisc() {
		t.Error("lo not promiscuous while the source is open")
	}
	stop := runSource(t, src.Run, src.Close)
	if _, err := tx.Write([]byte("twice")); err != nil {
		t.Fatal(err)
	}
	recs := sink.waitRecords(t, 2)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || !bytes.Equal(recs[0].payload, recs[1].payload) {
		t.Errorf("with Outgoing, got %d records, want the frame twice (sent and received)", len(recs))
	}
	if promisc() {
		t.Error("lo still promiscuous after Close")
	}
}
