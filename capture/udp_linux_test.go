package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"golang.org/x/sys/unix"
)

// runSource runs src in a goroutine and returns a function that closes it
// and returns Run's result.
// packedU8 is a declared type the listener gives its topics.
var packedU8 = ingest.Type{MessageEncoding: ingest.EncodingPacked,
	Schema: ingest.Schema{Name: "p.U8", Encoding: ingest.SchemaLayout, Data: []byte("u8 a")}}

func runSource(t *testing.T, run func(context.Context) error, closeFn func() error) func() error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run(context.Background()) }()
	return func() error {
		if err := closeFn(); err != nil {
			t.Errorf("Close: %v", err)
		}
		return <-done
	}
}

func dialUDP(t testing.TB, to netip.AddrPort) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// payloadFor returns a payload of n bytes that encodes its sender and
// sequence number, so a test can tell any two apart.
func payloadFor(sender, seq, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(sender*31 + seq*7 + i)
	}
	return b
}

func TestUDPLoopback(t *testing.T) {
	sink := newRecordingSink()
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", Topic: "udp/{src}:{sport}", Type: packedU8}, sink)
	if err != nil {
		t.Fatal(err)
	}
	stop := runSource(t, src.Run, src.Close)
	senders := []*net.UDPConn{dialUDP(t, src.LocalAddr()), dialUDP(t, src.LocalAddr())}
	sizes := []int{0, 1, 64, 1400, 9000, DefaultMaxPacket}
	want := map[string][][]byte{}
	for seq, n := range sizes {
		for i, c := range senders {
			p := payloadFor(i, seq, n)
			if _, err := c.Write(p); err != nil {
				t.Fatal(err)
			}
			topic := "udp/" + c.LocalAddr().String()
			want[topic] = append(want[topic], p)
		}
	}
	recs := sink.waitRecords(t, len(sizes)*len(senders))
	got := map[string][][]byte{}
	var lastCap int64
	for _, r := range recs {
		got[r.topic] = append(got[r.topic], r.payload)
		if r.captureNs < lastCap {
			t.Errorf("capture time went back: %d after %d", r.captureNs, lastCap)
		}
		lastCap = r.captureNs
	}
	for topic, w := range want {
		if !slices.EqualFunc(got[topic], w, bytes.Equal) {
			t.Errorf("topic %s: payloads differ (got %d, want %d)", topic, len(got[topic]), len(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("topics %v, want %d", sink.names, len(want))
	}
	if info := sink.infos[0]; info.Source != "udp:127.0.0.1:0" || !info.Type.Equal(packedU8) {
		t.Errorf("TopicInfo %+v", info)
	}
	if err := stop(); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
	st := src.Stats()
	if st.Packets != uint64(len(recs)) || st.Ingested != st.Packets || st.Topics != 2 || st.Lost != 0 {
		t.Errorf("Stats = %+v", st)
	}
	if len(sink.offline) != 2 {
		t.Errorf("Offline for %v, want both topics", sink.offline)
	}
	if err := src.Run(context.Background()); !errors.Is(err, net.ErrClosed) && err == nil {
		t.Errorf("Run after Close = %v, want an error", err)
	}
}

func TestUDPDestinationTemplate(t *testing.T) {
	f := func(addr, dial string) {
		t.Helper()
		sink := newRecordingSink()
		src, err := NewUDP(UDPOptions{Addr: addr, Topic: "udp/{dst}:{dport}"}, sink)
		if err != nil {
			t.Skipf("no %s on this host: %v", addr, err)
		}
		stop := runSource(t, src.Run, src.Close)
		to := netip.AddrPortFrom(netip.MustParseAddr(dial), src.LocalAddr().Port())
		if _, err := dialUDP(t, to).Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		r := sink.waitRecords(t, 1)
		if want := fmt.Sprintf("udp/%s:%d", dial, to.Port()); r[0].topic != want {
			t.Errorf("%s: topic %q, want %q", addr, r[0].topic, want)
		}
		stop()
	}
	f("0.0.0.0:0", "127.0.0.1")
	f("0.0.0.0:0", "127.0.0.2")
	f(":0", "127.0.0.1")
	f("[::1]:0", "::1")
}

func TestUDPTruncatedAndUnmapped(t *testing.T) {
	sink := newRecordingSink()
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", MaxPacket: 100, Topic: "udp/{sport}"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	stop := runSource(t, src.Run, src.Close)
	refused := dialUDP(t, src.LocalAddr())
	sink.mu.Lock()
	sink.reject[fmt.Sprintf("udp/%d", refused.LocalAddr().(*net.UDPAddr).Port)] = true
	sink.mu.Unlock()
	c := dialUDP(t, src.LocalAddr())
	for _, n := range []int{101, 100} {
		if _, err := refused.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	r := sink.waitRecords(t, 1)
	stop()
	st := src.Stats()
	if len(r) != 1 || len(r[0].payload) != 100 || st.Truncated != 2 || st.Unmapped != 1 || st.Packets != 4 {
		t.Errorf("records %d, Stats %+v; want one 100-byte record, 2 truncated, 1 unmapped", len(r), st)
	}
}

// TestUDPKernelDrops overflows a small receive buffer while the source is
// not reading, and checks that every datagram is either ingested or
// counted as lost: the kernel's SO_RXQ_OVFL counter reaches Stats.Lost and,
// when the socket feeds one topic (a template without {src}, {sport},
// {dst}), that topic's losses in the recorder (Sink.Lost). With {src} the
// kernel does not say whose datagrams it dropped: they stay the source's.
func TestUDPKernelDrops(t *testing.T) {
	for _, tc := range []struct {
		tmpl       string
		attributed bool
	}{{"udp/{dport}", true}, {"lidar/front", true}, {"udp/{src}", false}} {
		t.Run(tc.tmpl, func(t *testing.T) { testUDPKernelDrops(t, tc.tmpl, tc.attributed) })
	}
}

func testUDPKernelDrops(t *testing.T, tmpl string, attributed bool) {
	sink := newRecordingSink()
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", RcvBuf: 4096, Topic: tmpl}, sink)
	if err != nil {
		t.Fatal(err)
	}
	c := dialUDP(t, src.LocalAddr())
	const burst = 200
	for i := range burst {
		if _, err := c.Write(payloadFor(0, i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	stop := runSource(t, src.Run, src.Close)
	// The counter travels with the next datagram queued after the drops:
	// send markers until one gets through the draining queue.
	sent := burst
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			t.Fatal("no marker got through in 100 attempts")
		}
		if _, err := c.Write([]byte("after")); err != nil {
			t.Fatal(err)
		}
		sent++
		if r := sink.waitRecordsFor(time.Second / 10); len(r) > 0 && string(r[len(r)-1].payload) == "after" {
			break
		}
	}
	// A marker sent after the one seen may still be in the socket's queue
	// (a loaded machine delays the one seen past the 100 ms above): closing
	// the source now would discard it, neither ingested nor counted lost.
	// Give every datagram sent time to be read or counted.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st := src.Stats(); st.Ingested+st.Lost >= uint64(sent) {
			break
		}
	}
	stop()
	st := src.Stats()
	if st.Lost == 0 || st.Ingested+st.Lost != uint64(sent) {
		t.Errorf("Stats %+v: ingested %d + lost %d != sent %d", st, st.Ingested, st.Lost, sent)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var reported uint64
	for _, n := range sink.lost {
		reported += n
	}
	name := tmpl
	if tmpl == "udp/{dport}" {
		name = "udp/" + strconv.Itoa(int(src.LocalAddr().Port()))
	}
	switch {
	case attributed && (len(sink.lost) != 1 || sink.lost[name] != st.Lost):
		t.Errorf("losses reported to the sink %v, want %s: %d", sink.lost, name, st.Lost)
	case !attributed && reported != 0:
		t.Errorf("losses reported to the sink %v, want none (the template names the sender)", sink.lost)
	}
}
func TestUDPRunEndsWithContext(t *testing.T) {
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0"}, newRecordingSink())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	// A second Run with a live context receives again.
	sink := src.sink.(*recordingSink)
	stop := runSource(t, src.Run, src.Close)
	dialUDP(t, src.LocalAddr()).Write([]byte("again"))
	sink.waitRecords(t, 1)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestUDPRcvBuf(t *testing.T) {
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", RcvBuf: 8 << 20}, newRecordingSink())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n, err := src.RcvBuf()
	if err != nil {
		t.Fatal(err)
	}
	// SO_RCVBUFFORCE (root) gets the size asked; SO_RCVBUF is capped by
	// net.core.rmem_max. The kernel reports twice the size.
	if unix.Geteuid() == 0 && n != 16<<20 {
		t.Errorf("RcvBuf = %d, want %d", n, 16<<20)
	}
}

func TestNewUDPErrors(t *testing.T) {
	for _, o := range []UDPOptions{
		{Addr: "nonsense"},
		{Addr: "127.0.0.1:0", Topic: "udp/{port}"},
		{Addr: "127.0.0.1:0", Batch: 5000},
		{Addr: "127.0.0.1:0", MaxPacket: 70000},
		{Addr: "127.0.0.1:0", RcvBuf: -2},
	} {
		if _, err := NewUDP(o, newRecordingSink()); !errors.Is(err, ErrOptions) && !errors.Is(err, ErrTemplate) {
			t.Errorf("NewUDP(%+v) = %v, want ErrOptions or ErrTemplate", o, err)
		}
	}
	if _, err := NewUDP(UDPOptions{Addr: "239.1.1.1:0", Interface: "no-such-if0"}, newRecordingSink()); err == nil {
		t.Error("join on a missing interface succeeded")
	}
}

// gsoConn returns a sender whose writes the kernel splits into datagrams of
// seg bytes (UDP_SEGMENT), sent as one GSO packet.
func gsoConn(t testing.TB, to netip.AddrPort, seg int) *net.UDPConn {
	t.Helper()
	c := dialUDP(t, to)
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, seg) }); err != nil || serr != nil {
		t.Skipf("needs UDP_SEGMENT (Linux 4.18): %v %v", err, serr)
	}
	return c
}

// TestUDPGRO sends GSO bursts to a source with GRO on (the kernel keeps
// each burst whole) and to one with it off (the kernel splits it): both
// must record the same datagrams, the short last one included.
func TestUDPGRO(t *testing.T) {
	for _, gro := range []bool{true, false} {
		sink := newRecordingSink()
		src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", GRO: gro, RcvBuf: 4 << 20}, sink)
		if err != nil {
			t.Fatal(err)
		}
		stop := runSource(t, src.Run, src.Close)
		const seg = 100
		c := gsoConn(t, src.LocalAddr(), seg)
		var want [][]byte
		for burst := range 3 {
			buf := payloadFor(burst, 0, 10*seg+50)
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			for len(buf) > 0 {
				n := min(seg, len(buf))
				want = append(want, buf[:n])
				buf = buf[n:]
			}
		}
		recs := sink.waitRecords(t, len(want))
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !bytes.Equal(recs[i].payload, want[i]) {
				t.Errorf("GRO=%v: datagram %d: %d bytes, want %d as sent", gro, i, len(recs[i].payload), len(want[i]))
			}
		}
		if st := src.Stats(); st.Packets != uint64(len(want)) || st.Ingested != st.Packets {
			t.Errorf("GRO=%v: Stats %+v, want %d packets", gro, st, len(want))
		}
	}
	if _, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", GRO: true, MaxPacket: 1500}, newRecordingSink()); !errors.Is(err, ErrOptions) {
		t.Errorf("GRO with MaxPacket 1500: %v, want ErrOptions", err)
	}
}

// TestUDPMulticastIPv6 joins an IPv6 multicast group on one end of a veth
// pair between two private namespaces and receives what the other end
// sends to it, and nothing sent to another group on the same port, under
// topics named by the destination address.
func TestUDPMulticastIPv6(t *testing.T) {
	a, b := newNetns(t), newNetns(t)
	for _, n := range []*netns{a, b} {
		n.sysctl("net.ipv6.conf.all.disable_ipv6", "0")
		n.sysctl("net.ipv6.conf.default.disable_ipv6", "0")
		n.sysctl("net.ipv6.conf.default.accept_dad", "0") // addresses usable at once
	}
	a.ip("link add va type veth peer name vb netns " + b.name)
	a.ip("-6 addr add fd99::1/64 dev va nodad")
	b.ip("-6 addr add fd99::2/64 dev vb nodad")
	a.ip("link set va up")
	b.ip("link set vb up")
	a.waitUp("va")
	b.waitUp("vb")
	b.ip("-6 route add ff00::/8 dev vb") // this kernel adds no multicast route by itself

	sink := newRecordingSink()
	var src *UDPSource
	a.do(func() {
		var err error
		src, err = NewUDP(UDPOptions{Addr: "[ff02::1:2:3]:30490", Interface: "va", Topic: "mc/{dst}/{dport}"}, sink)
		if err != nil {
			t.Fatal(err)
		}
	})
	stop := runSource(t, src.Run, src.Close)
	if got := src.LocalAddr().Addr().WithZone(""); got != netip.MustParseAddr("ff02::1:2:3") {
		t.Fatalf("bound to %s, want the group", got)
	}

	const group, other = 20, 10
	send := func(to string, n int, tag byte) { sendTagged(t, b, to, n, tag) }
	send("[ff02::1:2:4%vb]:30490", other, 'x') // another group, same port: not joined
	send("[ff02::1:2:3%vb]:30490", group, 'g')
	recs := sink.waitRecords(t, group)
	stop() // Stats are final once Run has returned
	for i, r := range recs {
		if r.topic != "mc/ff02::1:2:3/30490" || len(r.payload) != 2 || r.payload[0] != 'g' || int(r.payload[1]) != i {
			t.Fatalf("record %d: %s %q, want mc/ff02::1:2:3/30490 %q", i, r.topic, r.payload, []byte{'g', byte(i)})
		}
	}
	if st := src.Stats(); st.Packets != group || st.Ingested != group {
		t.Errorf("Stats %+v: want exactly the %d datagrams sent to the joined group", st, group)
	}
}

// TestUDPRcvBufDefault: a source given no RcvBuf asks for DefaultRcvBuf,
// room for a burst, not the kernel's ~208 KiB; -1 leaves the kernel's.
func TestUDPRcvBufDefault(t *testing.T) {
	testutil.SkipUnlessRoot(t, "SO_RCVBUFFORCE past net.core.rmem_max needs CAP_NET_ADMIN")
	rcv := func(o UDPOptions) int {
		t.Helper()
		src, err := NewUDP(o, newRecordingSink())
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		n, err := src.RcvBuf()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rcv(UDPOptions{Addr: "127.0.0.1:0"}); n != 2*DefaultRcvBuf {
		t.Errorf("default RcvBuf = %d, want %d (twice DefaultRcvBuf, as the kernel reports it)", n, 2*DefaultRcvBuf)
	}
	if n := rcv(UDPOptions{Addr: "127.0.0.1:0", RcvBuf: -1}); n >= 2*DefaultRcvBuf {
		t.Errorf("RcvBuf -1 = %d, want the kernel's default", n)
	}
}

// TestUDPKernelReceiveTime: each datagram is stamped with the kernel's
// receive time (SO_TIMESTAMPNS), which lies between its send time, written
// in the payload, and the moment the test sees it recorded; not with the
// sink's clock (here a counter near 1e9).
func TestUDPKernelReceiveTime(t *testing.T) {
	sink := newRecordingSink()
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", Topic: "t"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	stop := runSource(t, src.Run, src.Close)
	c := dialUDP(t, src.LocalAddr())
	const n = 50
	for range n {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
		c.Write(b[:])
		time.Sleep(time.Millisecond)
	}
	sink.waitRecords(t, n)
	seen := time.Now().UnixNano()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for i, r := range sink.recs {
		sent := int64(binary.LittleEndian.Uint64(r.payload))
		if r.captureNs < sent || r.captureNs > seen {
			t.Errorf("datagram %d: capture time %d, want within [sent %d, seen %d] (%+dns from send)", i, r.captureNs, sent, seen, r.captureNs-sent)
		}
	}
}
