package capture

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"golang.org/x/sys/unix"
)

// Benchmarks drain pkts datagrams that the kernel already queued (sent
// with the timer stopped), so the figure is the receive side's cost per
// packet: recvmmsg or the TPACKET_V3 ring, topic mapping and the copy into
// the engine.Recorder. The baseline drains the same queue with a plain
// net.UDPConn.ReadFrom loop. Metrics: pkts/s and ns/pkt from the timed
// part, cpu-ms/100kpkt from getrusage over the timed part (the sender is
// excluded); allocs/op is per pkts packets.
const benchPkts = 128

var benchSizes = []int{64, 1400}

var benchSink uint64

// benchMeter measures CPU over the timed sections only.
type benchMeter struct {
	b       *testing.B
	cpu     time.Duration
	packets int
	mark    unix.Rusage
}

func cpuTime(ru *unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *benchMeter) start() {
	_ = unix.Getrusage(unix.RUSAGE_SELF, &m.mark)
	m.b.StartTimer()
}

// stop ends a timed section's CPU measurement; the timer keeps running,
// as b.Loop requires, until the next iteration stops it.
func (m *benchMeter) stop(packets int) {
	var now unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &now)
	m.cpu += cpuTime(&now) - cpuTime(&m.mark)
	m.packets += packets
}

func (m *benchMeter) report() {
	if m.packets == 0 {
		return
	}
	el := m.b.Elapsed()
	m.b.ReportMetric(float64(m.packets)/el.Seconds(), "pkts/s")
	m.b.ReportMetric(float64(el.Nanoseconds())/float64(m.packets), "ns/pkt")
	m.b.ReportMetric(m.cpu.Seconds()*1e3*100_000/float64(m.packets), "cpu-ms/100kpkt")
}

func forceRcvBuf(b *testing.B, c *net.UDPConn, n int) {
	rc, err := c.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) }); err != nil || serr != nil {
		b.Skipf("needs CAP_NET_ADMIN for SO_RCVBUFFORCE: %v %v", err, serr)
	}
}

// fill sends benchPkts datagrams of len(payload) bytes. With gso, each
// write carries up to 64 datagrams that the kernel sends as one GSO packet
// (the sender's UDP_SEGMENT must be len(payload)).
func fill(b *testing.B, c *net.UDPConn, payload []byte, gso bool) {
	if !gso {
		for i := range benchPkts {
			binary.BigEndian.PutUint32(payload, uint32(i))
			if _, err := c.Write(payload); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	size := len(payload)
	per := min(64, 65507/size)
	burst := make([]byte, per*size)
	for left := benchPkts; left > 0; left -= per {
		if _, err := c.Write(burst[:min(left, per)*size]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUDP drains plain datagrams (traffic=plain) and datagrams sent
// as GSO bursts (traffic=gso; what a NAPI NIC's GRO also produces for a
// steady stream), through the ReadFrom baseline and the source (with GRO
// for gso traffic).
func BenchmarkUDP(b *testing.B) {
	for _, size := range benchSizes {
		for _, gso := range []bool{false, true} {
			benchUDP(b, size, gso)
		}
	}
}

func benchUDP(b *testing.B, size int, gso bool) {
	name := "size=" + strconv.Itoa(size) + "/traffic=plain"
	if gso {
		name = "size=" + strconv.Itoa(size) + "/traffic=gso"
	}
	sender := func(b *testing.B, to netip.AddrPort) *net.UDPConn {
		if gso {
			return gsoConn(b, to, size)
		}
		return dialUDP(b, to)
	}
	b.Run(name+"/readfrom", func(b *testing.B) {
		rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer rx.Close()
		forceRcvBuf(b, rx, 8<<20)
		tx := sender(b, rx.LocalAddr().(*net.UDPAddr).AddrPort())
		payload, buf := make([]byte, size), make([]byte, 65536)
		b.SetBytes(int64(size * benchPkts))
		b.ReportAllocs()
		m := &benchMeter{b: b}
		for b.Loop() {
			b.StopTimer()
			fill(b, tx, payload, gso)
			m.start()
			for range benchPkts {
				n, _, err := rx.ReadFrom(buf)
				if err != nil || n != size {
					b.Fatal(n, err)
				}
				benchSink += uint64(buf[3])
			}
			m.stop(benchPkts)
		}
		m.report()
	})
	// source-nosink hands packets to a sink that only counts them: the
	// receive side alone, without the copy into the recorder's ring.
	for _, sub := range []string{"source", "source-nosink"} {
		benchUDPSource(b, name+"/"+sub, size, gso, sub == "source", sender)
	}
}

func benchUDPSource(b *testing.B, name string, size int, gso, recorder bool, sender func(*testing.B, netip.AddrPort) *net.UDPConn) {
	b.Run(name, func(b *testing.B) {
		var sink ingest.Sink = &countingSink{}
		if recorder {
			sink = newRecorder(b).Recorder
		}
		src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", RcvBuf: 8 << 20, Topic: "udp/{dport}", GRO: gso}, sink)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		tx := sender(b, src.LocalAddr())
		payload := make([]byte, size)
		b.SetBytes(int64(size * benchPkts))
		b.ReportAllocs()
		m := &benchMeter{b: b}
		for b.Loop() {
			b.StopTimer()
			fill(b, tx, payload, gso)
			m.start()
			want := src.c.ingested.Load() + benchPkts
			for src.c.ingested.Load() < want {
				if err := src.rc.Read(src.readFn); err != nil {
					b.Fatal(err)
				}
				if err := src.process(); err != nil {
					b.Fatal(err)
				}
			}
			m.stop(benchPkts)
		}
		m.report()
		if st := src.Stats(); st.Lost != 0 || st.Rejected != 0 {
			b.Fatalf("Stats %+v", st)
		}
	})
}

// readyPackets counts the frames in blocks the kernel has handed over,
// and those blocks.
func (s *RawSource) readyPackets() (packets, blocks int) {
	for i := range s.opts.Blocks {
		blk := s.block((s.cur + i) % s.opts.Blocks)
		if blockStatus(blk)&unix.TP_STATUS_USER == 0 {
			break
		}
		packets += int(binary.NativeEndian.Uint32(blk[blkNumPkts:]))
		blocks++
	}
	return packets, blocks
}

func BenchmarkRaw(b *testing.B) {
	for _, size := range benchSizes {
		for _, sub := range []string{"source", "source-nosink"} {
			benchRaw(b, size, sub)
		}
	}
}

func benchRaw(b *testing.B, size int, sub string) {
	b.Run("size="+strconv.Itoa(size)+"/"+sub, func(b *testing.B) {
		ns := newNetns(b)
		var sink ingest.Sink = &countingSink{}
		if sub == "source" {
			sink = newRecorder(b).Recorder
		}
		var src *RawSource
		var tx *net.UDPConn
		ns.do(func() {
			src = newRaw(b, RawOptions{Interface: "lo", Topic: "udp/{dport}", Payload: PayloadUDP,
				BlockTimeout: time.Millisecond, BlockSize: 1 << 18, Blocks: 16,
				Filter: &Filter{IPProto: IPProtoUDP}}, sink)
			rx := listenUDP(b, "127.0.0.1:0") // a port that exists, so no ICMP errors
			tx = dialUDP(b, rx.LocalAddr().(*net.UDPAddr).AddrPort())
		})
		defer src.Close()
		payload := make([]byte, size)
		b.SetBytes(int64(size * benchPkts))
		b.ReportAllocs()
		m := &benchMeter{b: b}
		for b.Loop() {
			b.StopTimer()
			fill(b, tx, payload, false)
			// Wait (untimed) for softirq delivery and block retirement.
			// A slow sender can spread the packets over timed-out blocks
			// until the ring is full: then drain what is there. A frame
			// the kernel dropped (counted in Lost) never comes.
			var ready, blocks int
			lost0 := src.Stats().Lost
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
				ready, blocks = src.readyPackets()
				if ready+int(src.Stats().Lost-lost0) >= benchPkts || blocks == src.opts.Blocks {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("ring holds %d of %d packets", ready, benchPkts)
				}
			}
			m.start()
			want := src.c.ingested.Load() + uint64(ready)
			for src.c.ingested.Load() < want {
				if err := src.drain(); err != nil {
					b.Fatal(err)
				}
			}
			m.stop(ready)
		}
		m.report()
		st := src.Stats()
		b.ReportMetric(float64(st.Lost), "lost")
		if st.Rejected != 0 || st.Ingested+st.Lost < st.KernelPackets {
			b.Fatalf("Stats %+v", st)
		}
	})
}
