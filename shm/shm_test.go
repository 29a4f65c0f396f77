package shm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

func TestRoundTripInOrder(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	p := newProducer(t, dir, ProducerOptions{Name: "vehicle/speed", Type: ingest.Named("f32"), Channel: "front"})
	const n, maxLen = 2000, 300
	buf := make([]byte, maxLen)
	for i := range uint64(n) {
		if err := p.Publish(int64(1000+i), payloadFor(buf, i, maxLen)); err != nil {
			t.Fatal(err)
		}
	}
	var id = waitTopic(t, sink, "vehicle/speed", "front")
	sink.waitFor(t, "all messages", func() bool { return len(sink.messages(id)) == n })
	for i, m := range sink.messages(id) {
		got, err := checkPayload(m.payload, maxLen)
		if err != nil || got != uint64(i) {
			t.Fatalf("message %d: index %d, %v", i, got, err)
		}
		if m.gen != int64(1000+i) {
			t.Fatalf("message %d: gen %d, want %d", i, m.gen, 1000+i)
		}
	}
	info := sink.topics[id]
	if info.Type.Schema.Name != "f32" || info.Source != "shm:"+p.Path() {
		t.Errorf("topic info %+v", info)
	}
}

func waitTopic(t testing.TB, sink *recSink, name, channel string) (id ingest.TopicID) {
	t.Helper()
	sink.waitFor(t, "discovery of "+name, func() bool {
		var ok bool
		id, ok = sink.topic(name, channel)
		return ok
	})
	return id
}

func TestLaggingConsumerCountsLossExactly(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "lidar", Capacity: MinCapacity})
	const n, maxLen = 5000, 100
	buf := make([]byte, maxLen)
	for i := range uint64(n) {
		if err := p.Publish(0, payloadFor(buf, i, maxLen)); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer starts late: all but the last ring-full are gone.
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{})
	id := waitTopic(t, sink, "lidar", "")
	sink.waitFor(t, "the last message", func() bool {
		m := sink.messages(id)
		return len(m) > 0 && getU64(m[len(m)-1].payload) == n-1
	})
	msgs := sink.messages(id)
	first := getU64(msgs[0].payload)
	for k, m := range msgs {
		if got, err := checkPayload(m.payload, maxLen); err != nil || got != first+uint64(k) {
			t.Fatalf("message %d: index %d, %v", k, got, err)
		}
	}
	// The segment's counters are added after each batch reaches the sink.
	sink.waitFor(t, "the counts to settle", func() bool { st := c.Stats(); return st.Messages+st.Lost >= n })
	st := c.Stats()
	if st.Messages+st.Lost != n || st.Lost != first {
		t.Errorf("received %d + lost %d != published %d (first kept %d)", st.Messages, st.Lost, n, first)
	}
	if first == 0 {
		t.Errorf("a 4 KiB ring kept all %d messages?", n)
	}
}

func TestCloseMarksOfflineAndConsumerRemovesFile(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	p := newProducer(t, dir, ProducerOptions{Name: "imu"})
	id := waitTopic(t, sink, "imu", "")
	for i := range 10 {
		p.Publish(int64(i), []byte("last words"))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
	if got := len(sink.messages(id)); got != 10 {
		t.Errorf("got %d messages before offline, want 10", got)
	}
	sink.waitFor(t, "file removal", func() bool {
		_, err := os.Stat(p.Path())
		return errors.Is(err, os.ErrNotExist)
	})
	if err := p.Publish(0, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
}

func TestSecondProducerForLiveTopicRefused(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "gps"})
	if _, err := NewProducer(dir, ProducerOptions{Name: "gps"}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second producer: %v, want ErrInUse", err)
	}
	p.Close()
	q, err := NewProducer(dir, ProducerOptions{Name: "gps"})
	if err != nil {
		t.Fatalf("replacing a closed segment: %v", err)
	}
	q.Close()
}

func TestPublishTooLarge(t *testing.T) {
	p := newProducer(t, t.TempDir(), ProducerOptions{Name: "cam", MaxPayload: 100})
	if err := p.Publish(0, make([]byte, 101)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if err := p.Publish(0, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Oversize != 1 || st.Published != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestProducerOptionsChecked(t *testing.T) {
	dir := t.TempDir()
	f := func(opts ProducerOptions, want error) {
		t.Helper()
		p, err := NewProducer(dir, opts)
		if !errors.Is(err, want) {
			t.Errorf("%+v: got %v, want %v", opts, err, want)
		}
		if p != nil {
			p.Close()
		}
	}
	f(ProducerOptions{Name: ""}, ErrBadName)
	f(ProducerOptions{Name: "a\x00b"}, ErrBadName)
	f(ProducerOptions{Name: string([]byte{0xff})}, ErrBadName)
	f(ProducerOptions{Name: "t", Channel: string(make([]byte, 65))}, ErrBadName)
	f(ProducerOptions{Name: "t", Capacity: -1}, ErrBadOption)
	f(ProducerOptions{Name: "t", Capacity: 4096, MaxPayload: 4096}, ErrBadOption)
	f(ProducerOptions{Name: "ok", Capacity: 5000}, nil)
}

func TestProducerModeAndGroup(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "m", Mode: 0o640, Group: 4242})
	fi, err := os.Stat(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if gid := statGID(t, p.Path()); gid != 4242 {
		t.Errorf("gid %d, want 4242", gid)
	}
	p2 := newProducer(t, dir, ProducerOptions{Name: "d"})
	if fi, _ := os.Stat(p2.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("default mode %v, want 0600", fi.Mode().Perm())
	}
	if filepath.Dir(p.Path()) != dir {
		t.Errorf("segment %s outside %s", p.Path(), dir)
	}
}
