package capture

import (
	"bytes"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// notifying passes everything to the recorder and signals each ingest, so
// tests wait on a channel instead of polling.
type notifying struct {
	*engine.Recorder
	ch chan struct{}
}

func (n *notifying) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	ok := n.Recorder.IngestAt(id, captureNs, genNs, payload)
	select {
	case n.ch <- struct{}{}:
	default:
	}
	return ok
}

func newRecorder(t testing.TB) *notifying {
	t.Helper()
	rec, err := engine.New(engine.Config{CacheSize: 16 << 20, TopicBytes: 4 << 20, Pre: new(time.Minute), Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	})
	return &notifying{Recorder: rec, ch: make(chan struct{}, 1)}
}

// waitWritten waits until the recorder stored n messages in all.
func (n *notifying) waitWritten(t *testing.T, want uint64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		var got uint64
		for _, ts := range n.Topics() {
			got += ts.Counters.Written
		}
		if got >= want {
			return
		}
		select {
		case <-n.ch:
		case <-deadline:
			t.Fatalf("recorder stored %d messages, want %d", got, want)
		}
	}
}

// readAll returns the recorded payloads and capture times of a topic.
func readAll(t *testing.T, rec *engine.Recorder, name string) (payloads [][]byte, times []int64) {
	t.Helper()
	for _, ts := range rec.Topics() {
		if ts.Info.Name != name {
			continue
		}
		_, lost, err := rec.ReadRange(ts.ID, 0, math.MaxInt64, func(m *engine.Message) bool {
			payloads = append(payloads, bytes.Clone(m.Data))
			times = append(times, m.CaptureNs)
			return true
		})
		if err != nil || lost != 0 {
			t.Fatalf("ReadRange %s: lost %d, %v", name, lost, err)
		}
		return payloads, times
	}
	t.Fatalf("no topic %q in %v", name, rec.Topics())
	return nil, nil
}

func checkRecorded(t *testing.T, rec *engine.Recorder, topic string, want [][]byte, from, to int64) {
	t.Helper()
	got, times := readAll(t, rec, topic)
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages recorded, want %d", topic, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: message %d differs: %d bytes, want %d", topic, i, len(got[i]), len(want[i]))
		}
		if times[i] < from || times[i] > to || (i > 0 && times[i] < times[i-1]) {
			t.Errorf("%s: message %d captured at %d, want within [%d, %d] and in order", topic, i, times[i], from, to)
		}
	}
}

func TestUDPIntoRecorder(t *testing.T) {
	rec := newRecorder(t)
	src, err := NewUDP(UDPOptions{Addr: "127.0.0.1:0", Topic: "lidar/front", RcvBuf: 8 << 20}, rec)
	if err != nil {
		t.Fatal(err)
	}
	stop := runSource(t, src.Run, src.Close)
	c := dialUDP(t, src.LocalAddr())
	from := time.Now().UnixNano()
	var want [][]byte
	for i := range 300 {
		p := payloadFor(2, i, 1+i*29%1500)
		want = append(want, p)
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			rec.waitWritten(t, uint64(len(want))) // pace the sender (see TestRawIntoRecorder)
		}
	}
	rec.waitWritten(t, uint64(len(want)))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, rec.Recorder, "lidar/front", want, from, time.Now().UnixNano())
	if ts := rec.Topics()[0]; ts.Online || ts.Info.Source != "udp:127.0.0.1:0" {
		t.Errorf("after Close: %+v, want the topic offline", ts)
	}
}

func TestRawIntoRecorder(t *testing.T) {
	ns := newNetns(t)
	rec := newRecorder(t)
	var src *RawSource
	var c *net.UDPConn
	var port int
	ns.do(func() {
		var err error
		src, err = NewRaw(RawOptions{Interface: "lo", Topic: "someip/{dport}", Payload: PayloadUDP, BlockTimeout: time.Millisecond, BlockSize: 1 << 20}, rec)
		testutil.SkipIfNotSupported(t, err) // needs CAP_NET_RAW
		if err != nil {
			t.Fatal(err)
		}
		rx := listenUDP(t, "127.0.0.1:0")
		port = rx.LocalAddr().(*net.UDPAddr).Port
		c = dialUDP(t, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	stop := runSource(t, src.Run, src.Close)
	from := time.Now().UnixNano()
	var want [][]byte
	for i := range 300 {
		p := payloadFor(3, i, i*31%1400)
		want = append(want, p)
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			// pace the sender: on a loaded machine (CI under -race) the
			// source goroutine may be starved long enough for the kernel
			// ring to overflow, which is counted as lost, not a bug
			rec.waitWritten(t, uint64(len(want)))
		}
	}
	rec.waitWritten(t, uint64(len(want)))
	to := time.Now().UnixNano()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, rec.Recorder, "someip/"+strconv.Itoa(port), want, from, to)
}
