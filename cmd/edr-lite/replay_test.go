package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

// countSink counts what a drained segment holds.
type countSink struct {
	info  ingest.TopicInfo
	n     int
	first []byte
	gens  []int64
}

func (s *countSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	s.info = info
	return 0, nil
}
func (s *countSink) Now() int64                         { return 0 }
func (s *countSink) Offline(ingest.TopicID)             {}
func (s *countSink) Lost(ingest.TopicID, int64, uint64) {}
func (s *countSink) IngestAt(_ ingest.TopicID, _, gen int64, p []byte) bool {
	if s.n == 0 {
		s.first = append([]byte(nil), p...)
	}
	s.n++
	s.gens = append(s.gens, gen)
	return true
}

// topicSink counts what a shm consumer delivers, per topic. Safe for the
// consumer's goroutines.
type topicSink struct {
	mu     sync.Mutex
	ids    map[string]ingest.TopicID
	topics []*countSink
}

func (s *topicSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[info.Name]; ok {
		return id, nil
	}
	s.ids[info.Name] = ingest.TopicID(len(s.topics))
	s.topics = append(s.topics, &countSink{info: info})
	return ingest.TopicID(len(s.topics) - 1), nil
}
func (s *topicSink) Now() int64                         { return time.Now().UnixNano() }
func (s *topicSink) Offline(ingest.TopicID)             {}
func (s *topicSink) Lost(ingest.TopicID, int64, uint64) {}
func (s *topicSink) IngestAt(id ingest.TopicID, c, gen int64, p []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topics[id].IngestAt(0, c, gen, p)
}

// topic returns a copy of what topic received.
func (s *topicSink) topic(name string) countSink {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[name]; ok {
		c := s.topics[id]
		return countSink{info: c.info, n: c.n, first: c.first}
	}
	return countSink{}
}

// TestReplayToShm replays into segments a real shm consumer reads, then
// finds no segment left behind (#15.14).
func TestReplayToShm(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	seg := filepath.Join(dir, "segs")
	os.MkdirAll(seg, 0o700)
	sink := &topicSink{ids: map[string]ingest.TopicID{}}
	cons, err := shm.NewConsumer(seg, sink, shm.ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	code, out, errs := runCLI(t, "replay", dump, "--to", "shm:"+seg, "--asfast")
	if code != exitOK || !strings.Contains(out, "replayed 110 messages") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
	if strings.Contains(out, "timing error") {
		t.Errorf("as fast as possible printed a timing error: %q", out)
	}
	f := func(topic string, n int, typ string, first byte) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		s := sink.topic(topic)
		for s.n < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			s = sink.topic(topic)
		}
		if s.n != n || s.info.Type.Schema.Name != typ || len(s.first) == 0 || s.first[0] != first {
			t.Errorf("%s: %d messages, type %q, first %v; want %d, %q, %d", topic, s.n, s.info.Type, s.first, n, typ, first)
		}
	}
	f("vehicle/speed", 100, "f32", 0)
	f("camera/front", 10, "", 0)
	// no segment is left (the directory's doorbell stays)
	if segs, _ := filepath.Glob(filepath.Join(seg, "*"+shm.SegmentSuffix)); len(segs) != 0 {
		t.Errorf("replay left %d segments in %s", len(segs), seg)
	}

	// a window of topics and time, with no consumer: no segment is left
	seg2 := filepath.Join(dir, "segs2")
	code, out, errs = runCLI(t, "replay", dump, "--to", "shm:"+seg2, "--asfast", "--topics", "vehicle/*", "--start", "100ms", "--duration", "195ms")
	if code != exitOK || !strings.Contains(out, "replayed 20 messages") {
		t.Fatalf("window: code %d, stdout %q, stderr %q", code, out, errs)
	}
	if segs, _ := filepath.Glob(filepath.Join(seg2, "*"+shm.SegmentSuffix)); len(segs) != 0 {
		t.Errorf("replay without a consumer left %d segments in %s", len(segs), seg2)
	}
}

func TestReplayTimedToUDP(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	addr := conn.LocalAddr().String()
	// camera/front sorts first and takes the base port; speed is mapped.
	code, out, errs := runCLI(t, "replay", dump, "--to", "udp:"+addr, "--rate", "20", "--spin", "100us", "--topics", "vehicle/speed",
		"--map", "vehicle/speed="+addr)
	if code != exitOK || !strings.Contains(out, "replayed 100 messages") || !strings.Contains(out, "timing error: p50") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "vehicle/speed") || !strings.Contains(errs, "-> udp "+addr) {
		t.Errorf("mapping not printed: %q", errs)
	}
	buf := make([]byte, 100)
	for i := 0; i < 100; i++ {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := conn.Read(buf)
		if err != nil || n != 4 || buf[0] != byte(i) {
			t.Fatalf("datagram %d: %d bytes %v, %v", i, n, buf[:n], err)
		}
	}
}

func TestReplayUsage(t *testing.T) {
	dump := writeTestDump(t, t.TempDir(), "a.pack")
	f := func(want int, wantErr string, args ...string) {
		t.Helper()
		code, _, errs := runCLI(t, append([]string{"replay"}, args...)...)
		if code != want || !strings.Contains(errs, wantErr) {
			t.Errorf("replay %v: code %d, stderr %q; want %d and %q", args, code, errs, want, wantErr)
		}
	}
	f(exitUsage, "-o OUTPUT is required", dump)
	f(exitUsage, "want shm:DIR", dump, "-o", "tcp:1.2.3.4:5")
	f(exitUsage, "--to: time \"tcp:1.2.3.4:5\"", dump, "--to", "tcp:1.2.3.4:5") // neither an output nor a time
	f(exitUsage, "exclude each other", dump, "--to", "discard", "--rate", "2", "--asfast")
	f(exitUsage, "must be positive", dump, "--to", "discard", "--rate", "0")
	f(exitUsage, "--start", dump, "--to", "discard", "--start", "soon")
	f(exitUsage, "--map is for", dump, "--to", "discard", "--map", "a=1.2.3.4:5")
	f(exitUsage, "--topics: glob \"[x\"", dump, "--to", "discard", "--topics", "[x")
	f(exitUsage, "is after --to", dump, "-o", "discard", "--from", "2s", "--to", "1s")
	f(exitFail, "no topic", dump, "--to", "discard", "--topics", "nothing/*")
	f(exitFail, "no such file", filepath.Join(t.TempDir(), "missing.pack"), "--to", "discard")
	f(exitUsage, "wrong number of arguments", "--to", "discard")
}

// TestReplaySIGINT runs the real binary looping a dump to UDP and stops it
// with SIGINT: it exits 0 with the summary.
func TestReplaySIGINT(t *testing.T) {
	bin := edrBinary(t)
	dump := writeTestDump(t, t.TempDir(), "a.pack")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd := exec.Command(bin, "replay", dump, "--to", "udp:"+conn.LocalAddr().String(), "--topics", "vehicle/speed", "--loop", "--rate", "10")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once datagrams arrive the replay is running: interrupt it.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Read(make([]byte, 100)); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	if err != nil || !strings.Contains(stdout.String(), "interrupted") || !strings.Contains(stdout.String(), "timing error") {
		t.Fatalf("exit %v, output %q", err, stdout.String())
	}
}
