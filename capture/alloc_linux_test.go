//go:build !race

package capture

import (
	"net"
	"testing"
	"time"
)

// TestUDPSourceAllocs receives real datagrams through recvmmsg, the
// control-message parser, the mapper and the sink, and asserts that a
// batch costs no allocation.
func TestUDPSourceAllocs(t *testing.T) {
	sink := &countingSink{}
	const batch, runs = 16, 10 // 192 datagrams: within the default rmem_max for non-root runs
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

// TestRawSourceAllocs drains real frames from the TPACKET_V3 ring through
// parsing, the mapper and the sink, and asserts that a block costs no
// allocation.
func TestRawSourceAllocs(t *testing.T) {
	ns := newNetns(t)
	sink := &countingSink{}
	var src *RawSource
	var tx *net.UDPConn
	ns.do(func() {
		src = newRaw(t, RawOptions{Interface: "lo", Topic: "udp/{src}:{dport}", Payload: PayloadUDP,
			BlockSize: 1 << 16, Blocks: 64, BlockTimeout: time.Millisecond}, sink)
		rx := listenUDP(t, "127.0.0.1:0")
		tx = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	defer src.Close()
	const runs, perRun = 20, 16
	send := func() {
		for range perRun {
			if _, err := tx.Write(make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	send()
	for n, _ := src.readyPackets(); n < perRun; n, _ = src.readyPackets() { // the block retires within BlockTimeout
		time.Sleep(time.Millisecond)
	}
	src.drain() // discovers the topic
	// Fill one block per run first (sending allocates, draining must not):
	// each burst is left to retire into a block of its own.
	for i := range runs + 1 {
		send()
		for deadline := time.Now().Add(5 * time.Second); ; {
			if n, _ := src.readyPackets(); n >= (i+1)*perRun {
				break
			}
			if time.Now().After(deadline) {
				n, _ := src.readyPackets()
				t.Fatalf("ring holds %d of %d packets", n, (i+1)*perRun)
			}
			time.Sleep(time.Millisecond)
		}
	}
	before := sink.n
	if n := testing.AllocsPerRun(runs, func() {
		if !src.drainBlock() {
			t.Fatal("no block ready")
		}
	}); n != 0 {
		t.Fatalf("draining a block allocates %v times", n)
	}
	if sink.n-before < runs+1 || sink.topics != 1 {
		t.Fatalf("sink got %d messages in %d topics from %d blocks", sink.n-before, sink.topics, runs+1)
	}
}
