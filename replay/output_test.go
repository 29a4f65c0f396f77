package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/shm"
)

// TestShmIntoRecorder replays two dumps through shm segments into a real
// shm.Consumer feeding a real engine.Recorder, then reads every topic back
// from the recorder's rings: same bytes, same producer times, same order,
// types carried over.
func TestShmIntoRecorder(t *testing.T) {
	paths, all := twoDumps(t)
	dir := t.TempDir()
	rec, err := engine.New(engine.Config{CacheSize: 8 << 20, TopicBytes: 1 << 20, Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	cons, err := shm.NewConsumer(dir, rec, shm.ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	defer cons.Close()

	p, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := p.Run(context.Background(), NewShm(ShmOptions{Dir: dir, Capacity: 256 << 10}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != uint64(len(all)) || st.Dropped != 0 {
		t.Fatalf("stats %+v, want %d messages", st, len(all))
	}
	want := map[string][]got{}
	for _, g := range all {
		want[g.topic] = append(want[g.topic], g)
	}
	// Wait until the consumer has ingested everything.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := uint64(0)
		for _, ts := range rec.Topics() {
			n += ts.Counters.Written
		}
		if n == uint64(len(all)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorder holds %d messages after 20s, want %d", n, len(all))
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, ts := range rec.Topics() {
		topic := ts.Info.Name
		if ts.Info.Channel != "" {
			topic += "#" + ts.Info.Channel
		}
		w := want[topic]
		rd, err := rec.NewReader(ts.ID)
		if err != nil {
			t.Fatal(err)
		}
		var m engine.Message
		i := 0
		for rd.ReadInto(&m) {
			if i >= len(w) {
				t.Fatalf("%s: more than %d messages", topic, len(w))
			}
			if !bytes.Equal(m.Data, w[i].data) || m.GenNs != w[i].gen {
				t.Fatalf("%s message %d: gen %d, %d bytes; want gen %d, %d bytes (bit-exact)", topic, i, m.GenNs, len(m.Data), w[i].gen, len(w[i].data))
			}
			i++
		}
		rd.Close()
		if i != len(w) {
			t.Errorf("%s: %d messages, want %d", topic, i, len(w))
		}
		delete(want, topic)
	}
	if len(want) != 0 {
		t.Errorf("topics never discovered: %v", want)
	}
	// the recorder drained and removed every segment; none is left behind
	// (the directory's doorbell stays: it belongs to the directory)
	if segs, _ := filepath.Glob(filepath.Join(dir, "*"+shm.SegmentSuffix)); len(segs) != 0 {
		t.Errorf("replay left %d segments in the segment directory: %v", len(segs), segs)
	}
}

func TestShmOutputCarriesTypeAndDropsOversize(t *testing.T) {
	dir := t.TempDir()
	o := NewShm(ShmOptions{Dir: dir, Capacity: 4096})
	topics := []Topic{{Index: 0, Name: "cam", Type: ingest.Named("gray8")}}
	if err := o.Open(topics); err != nil {
		t.Fatal(err)
	}
	err := o.Write(&Message{Topic: &topics[0], Data: make([]byte, 4096)})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize write: %v, want ErrTooLarge", err)
	}
	if err := o.Write(&Message{Topic: &topics[0], GenNs: 7, Data: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	var sink typeSink
	if _, err := shm.DrainFile(dir+"/"+shm.SegmentFileName("cam", ""), &sink, shm.ConsumerOptions{}); err != nil {
		t.Fatal(err)
	}
	if sink.info.Type.Schema.Name != "gray8" || sink.n != 1 {
		t.Errorf("segment type %q with %d messages, want gray8 with 1", sink.info.Type, sink.n)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	// no consumer removed it: Close did, after DrainWait
	if segs, _ := filepath.Glob(filepath.Join(dir, "*"+shm.SegmentSuffix)); len(segs) != 0 {
		t.Errorf("replay left %d segments in the segment directory: %v", len(segs), segs)
	}
	if err := NewShm(ShmOptions{}).Open(topics); !errors.Is(err, ErrOptions) {
		t.Errorf("no dir: %v", err)
	}
	// Keep leaves the closed segment for a consumer started later
	keep := NewShm(ShmOptions{Dir: dir, Capacity: 4096, Keep: true})
	if err := keep.Open(topics); err != nil {
		t.Fatal(err)
	}
	if err := keep.Write(&Message{Topic: &topics[0], GenNs: 8, Data: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	if err := keep.Close(); err != nil {
		t.Fatal(err)
	}
	sink = typeSink{}
	if _, err := shm.DrainFile(dir+"/"+shm.SegmentFileName("cam", ""), &sink, shm.ConsumerOptions{}); err != nil || sink.n != 1 {
		t.Errorf("kept segment: %v, %d messages, want 1", err, sink.n)
	}
}

type typeSink struct {
	info ingest.TopicInfo
	n    int
}

func (s *typeSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	s.info = info
	return 0, nil
}
func (s *typeSink) Now() int64                                         { return 0 }
func (s *typeSink) IngestAt(ingest.TopicID, int64, int64, []byte) bool { s.n++; return true }
func (s *typeSink) Offline(ingest.TopicID)                             {}
func (s *typeSink) Lost(ingest.TopicID, int64, uint64)                 {}

// listenRun binds n consecutive loopback UDP ports and returns the sockets.
func listenRun(t *testing.T, n int) []*net.UDPConn {
	t.Helper()
	for try := 0; try < 50; try++ {
		first, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		conns := []*net.UDPConn{first}
		base := first.LocalAddr().(*net.UDPAddr).Port
		for i := 1; i < n; i++ {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: base + i})
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		if len(conns) == n {
			for _, c := range conns {
				c.SetReadBuffer(4 << 20)
				t.Cleanup(func() { c.Close() })
			}
			return conns
		}
		for _, c := range conns {
			c.Close()
		}
	}
	t.Skip("could not bind consecutive loopback UDP ports")
	return nil
}

// TestUDPLoopback replays to real loopback sockets: topic i (sorted order)
// on base port + i, bytes exact, per-topic order kept; an explicit mapping
// overrides the default.
func TestUDPLoopback(t *testing.T) {
	paths, all := twoDumps(t)
	conns := listenRun(t, 3)
	base := conns[0].LocalAddr().(*net.UDPAddr).AddrPort()
	extra := listenRun(t, 1)[0]
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprint("map=", mapped), func(t *testing.T) {
			p, err := Open(paths, Options{Rate: 50})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			opts := UDPOptions{Base: base.String()}
			recv := map[string]*net.UDPConn{"a": conns[0], "a#ch1": conns[1], "b": conns[2]}
			if mapped {
				opts.Map = map[string]string{"b": extra.LocalAddr().String()}
				recv["b"] = extra
			}
			out := NewUDP(opts)
			st, err := p.Run(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			// the data-less message goes out as an empty datagram
			if st.Messages != uint64(len(all)) || st.Dropped != 0 {
				t.Fatalf("stats %+v, want %d messages", st, len(all))
			}
			if d := out.Destinations(); d[0] != base || d[1] != netip.AddrPortFrom(base.Addr(), base.Port()+1) {
				t.Errorf("destinations %v, base %v", d, base)
			}
			for topic, c := range recv {
				var want [][]byte
				for _, g := range all {
					if g.topic == topic {
						want = append(want, g.data)
					}
				}
				buf := make([]byte, 70000)
				for i, w := range want {
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					n, err := c.Read(buf)
					if err != nil {
						t.Fatalf("%s datagram %d: %v", topic, i, err)
					}
					if !bytes.Equal(buf[:n], w) {
						t.Fatalf("%s datagram %d: %d bytes, want %d (bit-exact, in order)", topic, i, n, len(w))
					}
				}
			}
		})
	}
}

func TestUDPOutputErrors(t *testing.T) {
	topics := []Topic{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}}
	f := func(opts UDPOptions) {
		t.Helper()
		o := NewUDP(opts)
		if err := o.Open(topics); !errors.Is(err, ErrOptions) {
			t.Errorf("Open(%+v): %v, want ErrOptions", opts, err)
		}
		o.Close()
	}
	f(UDPOptions{})
	f(UDPOptions{Base: "127.0.0.1:65535"})
	f(UDPOptions{Base: "127.0.0.1:notaport"})
	f(UDPOptions{Base: "127.0.0.1:9", Map: map[string]string{"b": "::1::"}})
	o := NewUDP(UDPOptions{Base: "127.0.0.1:9"})
	if err := o.Open(topics); err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Write(&Message{Topic: &topics[0], Data: make([]byte, MaxDatagram+1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
}
