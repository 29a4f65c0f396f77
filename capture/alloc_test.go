//go:build !race

package capture

import (
	"testing"

	"edr-lite/engine"
)

func TestParseFrameAllocs(t *testing.T) {
	frame := buildFrame(frameSpec{vlans: []uint16{5}, src: ip6a, dst: ip6b, sport: 1, dport: 2, payload: []byte("x")})
	var p Packet
	if n := testing.AllocsPerRun(100, func() { _ = ParseFrame(frame, &p) }); n != 0 {
		t.Fatalf("ParseFrame allocates %v times per frame", n)
	}
}

func TestMapperLookupAllocs(t *testing.T) {
	m := newMapper(MustTemplate("udp/{dst}:{dport}"), newRecordingSink(), engine.TopicInfo{}, 0)
	var a, b Packet
	if err := ParseFrame(buildFrame(frameSpec{src: ip6a, dst: ip6b, sport: 1, dport: 2}), &a); err != nil {
		t.Fatal(err)
	}
	if err := ParseFrame(buildFrame(frameSpec{src: ip4a, dst: ip4b, sport: 1, dport: 3}), &b); err != nil {
		t.Fatal(err)
	}
	m.lookup(&a)
	m.lookup(&b)
	// Alternating keys miss the last-key cache and hit the map.
	if n := testing.AllocsPerRun(100, func() { m.lookup(&a); m.lookup(&b) }); n != 0 {
		t.Fatalf("mapper lookup allocates %v times per hit", n)
	}
}

// TestUDPSourceAllocs receives real datagrams through recvmmsg, the
// control-message parser, the mapper and the sink, and asserts that a
// batch costs no allocation.
func TestUDPSourceAllocs(t *testing.T) {
	sink := &countingSink{}
	const batch, runs = 16, 50
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", Batch: batch, RcvBuf: 8 << 20, Topic: "udp/{src}:{sport}"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := dialUDP(t, src.LocalAddr())
	for range batch * (runs + 2) {
		if _, err := c.Write(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		if err := src.rc.Read(src.readFn); err != nil || src.errno != 0 {
			t.Fatal(err, src.errno)
		}
		src.process()
	}
	step() // discovers the topic
	if n := testing.AllocsPerRun(runs, step); n != 0 {
		t.Fatalf("a batch of %d datagrams allocates %v times", batch, n)
	}
	if sink.n != batch*(runs+2) || sink.topics != 1 {
		t.Fatalf("sink got %d messages in %d topics, want %d in 1", sink.n, sink.topics, batch*(runs+2))
	}
}
