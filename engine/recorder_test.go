package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

func newTestRecorder(t testing.TB, cfg Config) (*Recorder, *clock.Virtual) {
	t.Helper()
	vc := clock.NewVirtual(1_000_000_000)
	if cfg.Clock == nil {
		cfg.Clock = vc
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 1 << 20
	}
	if cfg.TopicBytes == 0 {
		cfg.TopicBytes = 64 << 10
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r, vc
}

func TestConfigErrorsNameTheField(t *testing.T) {
	f := func(cfg Config, field string) {
		t.Helper()
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", cfg, err, field)
		}
	}
	f(Config{}, "CacheSize")
	f(Config{CacheSize: 1 << 20, TopicBytes: 100}, "TopicBytes")
	f(Config{CacheSize: 1 << 20, TopicBytes: 2 << 20}, "CacheSize") // the cache cannot hold one ring
	f(Config{CacheSize: 1 << 20, Include: []string{"["}}, "Include[0]")
	f(Config{CacheSize: 1 << 20, Exclude: []string{"a", "["}}, "Exclude[1]")
	f(Config{CacheSize: 1 << 20, Topics: []TopicOverride{{Match: "a"}, {Match: "b", OnlyFront: true, OnlyBack: true}}}, "Topics[1].OnlyFront")
	f(Config{CacheSize: 1 << 20, Topics: []TopicOverride{{Match: "a", KeepLast: -1}}}, "Topics[0].KeepLast")
	f(Config{CacheSize: 1 << 20, Topics: []TopicOverride{{Match: "a", MaxBytes: 10}}}, "Topics[0].MaxBytes")
	f(Config{CacheSize: 1 << 20, MaxPacket: -1}, "MaxPacket")
}

func TestDiscover(t *testing.T) {
	r, _ := newTestRecorder(t, Config{
		MaxTopics: 4,
		Include:   []string{"vehicle/*", "cam*"},
		Exclude:   []string{"vehicle/debug"},
		Topics:    []TopicOverride{{Match: "vehicle/big", MaxBytes: 256 << 10}, {Match: "cam#rear", Disabled: true}},
	})
	f := func(info ingest.TopicInfo, wantErr error) ingest.TopicID {
		t.Helper()
		id, err := r.Discover(info)
		if !errors.Is(err, wantErr) {
			t.Fatalf("Discover(%s#%s) = %v, want %v", info.Name, info.Channel, err, wantErr)
		}
		return id
	}
	speed := f(ingest.TopicInfo{Name: "vehicle/speed"}, nil)
	f(ingest.TopicInfo{Name: "vehicle/debug"}, ErrExcluded)
	f(ingest.TopicInfo{Name: "lidar"}, ErrExcluded)
	f(ingest.TopicInfo{Name: "cam", Channel: "rear"}, ErrExcluded)
	front := f(ingest.TopicInfo{Name: "cam", Channel: "front"}, nil)
	if front == speed {
		t.Fatal("two topics got one id")
	}
	if again := f(ingest.TopicInfo{Name: "vehicle/speed"}, nil); again != speed {
		t.Fatalf("rediscovery gave id %d, want %d", again, speed)
	}
	big := f(ingest.TopicInfo{Name: "vehicle/big"}, nil)
	st := r.Topics()
	if len(st) != 3 || st[big].RingBytes != 256<<10 || st[speed].RingBytes != 64<<10 {
		t.Fatalf("Topics = %+v", st)
	}
	f(ingest.TopicInfo{Name: "vehicle/4"}, nil)
	f(ingest.TopicInfo{Name: "vehicle/5"}, ErrTooManyTopics)
}

func TestDiscoverNoMemory(t *testing.T) {
	r, _ := newTestRecorder(t, Config{CacheSize: 256 << 10, TopicBytes: 128 << 10})
	for i := range 2 {
		if _, err := r.Discover(ingest.TopicInfo{Name: fmt.Sprint("t", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.Discover(ingest.TopicInfo{Name: "t2"})
	if !errors.Is(err, ErrNoMemory) || !strings.Contains(err.Error(), `"t2"`) {
		t.Fatalf("third topic: %v, want ErrNoMemory naming t2", err)
	}
}

func TestIngestAndRead(t *testing.T) {
	r, vc := newTestRecorder(t, Config{Pre: new(time.Second), Post: new(time.Second), Guard: new(time.Duration(0))})
	id, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for i := range 10 {
		vc.Advance(time.Millisecond)
		if !r.Ingest(id, int64(i), []byte{byte(i)}) {
			t.Fatalf("Ingest %d rejected", i)
		}
	}
	var m Message
	for i := range 10 {
		if !rd.ReadInto(&m) || m.Topic != id || m.Data[0] != byte(i) || m.GenNs != int64(i) || m.CaptureNs != 1_000_000_000+int64(i+1)*1e6 {
			t.Fatalf("message %d = %+v", i, m)
		}
	}
	if rd.ReadInto(&m) {
		t.Fatal("read past the newest message")
	}
	var got []byte
	n, lost, err := r.ReadRange(id, 1_003_000_000, 1_005_000_000, func(m *Message) bool {
		got = append(got, m.Data[0])
		return true
	})
	if err != nil || n != 3 || lost != 0 || string(got) != "\x02\x03\x04" {
		t.Fatalf("ReadRange = %d, %d, %v, %v", n, lost, err, got)
	}
	r.Offline(id)
	if r.Ingest(id, 0, []byte("x")) {
		t.Fatal("Ingest to an offline topic accepted")
	}
	if r.IngestAt(99, 0, 0, nil) || r.IngestAt(1<<30, 0, 0, nil) {
		t.Fatal("Ingest to an unknown id accepted")
	}
	st := r.Topics()[id]
	if st.Online || st.Counters.Written != 10 || st.Counters.RejectedOffline != 1 || st.RetentionNs != 2e9 {
		t.Fatalf("status = %+v", st)
	}
	if _, err := r.Discover(ingest.TopicInfo{Name: "a"}); err != nil || !r.Topics()[id].Online {
		t.Fatalf("rediscovery: %v", err)
	}
	if _, err := r.NewReader(42); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("NewReader(42) = %v", err)
	}
}

func TestCloseWithOpenReader(t *testing.T) {
	r, _ := newTestRecorder(t, Config{})
	id, _ := r.Discover(ingest.TopicInfo{Name: "a"})
	r.Ingest(id, 0, []byte("x"))
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var m Message
	if !rd.ReadInto(&m) || string(m.Data) != "x" {
		t.Fatal("open reader cannot read after Recorder.Close")
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
	if rd.ReadInto(&m) {
		t.Fatal("closed reader read")
	}
	if _, err := r.NewReader(id); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewReader after Close = %v", err)
	}
	if _, err := r.Discover(ingest.TopicInfo{Name: "b"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Discover after Close = %v", err)
	}
}

func TestMultiProducer(t *testing.T) {
	r, _ := newTestRecorder(t, Config{TopicBytes: 1 << 20, CacheSize: 2 << 20})
	id, _ := r.Discover(ingest.TopicInfo{Name: "m", MultiProducer: true})
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 1000 {
				r.IngestAt(id, int64(i), int64(w), []byte{byte(w), byte(i)})
			}
		}()
	}
	for range 4 {
		<-done
	}
	if c := r.Topics()[id].Counters; c.Written != 4000 || c.Bytes != 8000 {
		t.Fatalf("counters = %+v", c)
	}
}
