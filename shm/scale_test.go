package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// procCount reads the process's OS threads (/proc/self/status) and open
// descriptors (/proc/self/fd).
func procCount(t testing.TB) (threads, fds int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("needs /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("needs /proc: %v", err)
	}
	return threads, len(ents)
}

// TestIdleSegmentsBoundedThreadsAndFDs: a consumer following 1000 idle
// segments parks a bounded number of OS threads (it used to park one per
// segment in FUTEX_WAIT: 100 idle topics were 108 threads, 10 100 a fatal
// thread exhaustion) and holds a bounded number of descriptors (it held
// each segment's file and a pidfd: two per segment); a publish on any of
// them still wakes it at once, through the doorbell (the liveness interval
// is 10 s, so nothing else would).
func TestIdleSegmentsBoundedThreadsAndFDs(t *testing.T) {
	testutil.SkipUnderEmulation(t, "1000 segments and thread counts")
	const n = 1000
	dir := t.TempDir()
	baseThreads, baseFDs := procCount(t)
	ps := make([]*Producer, n)
	for i := range ps {
		ps[i] = newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("idle/%d", i), Capacity: MinCapacity})
	}
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 10 * time.Second})
	sink.waitFor(t, "every topic", func() bool { return c.Stats().Segments == n && sink.count() == n })
	if !c.Stats().Doorbell {
		t.Fatalf("no doorbell: %v", c.Stats().Errors)
	}
	time.Sleep(300 * time.Millisecond) // every follower asleep
	threads, fds := procCount(t)
	t.Logf("%d idle segments: %d threads (%d before), %d descriptors (%d before)", n, threads, baseThreads, fds, baseFDs)
	if threads > baseThreads+8 {
		t.Errorf("%d OS threads for %d idle segments, %d before: not bounded", threads, n, baseThreads)
	}
	if fds > baseFDs+8 {
		t.Errorf("%d descriptors for %d idle segments, %d before: not bounded", fds, n, baseFDs)
	}
	for _, k := range []int{0, n / 2, n - 1} {
		id, _ := sink.topic(fmt.Sprintf("idle/%d", k), "")
		start := time.Now()
		if err := ps[k].Publish(1, []byte("wake")); err != nil {
			t.Fatal(err)
		}
		sink.waitFor(t, "the message", func() bool { return len(sink.messages(id)) == 1 })
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("segment %d: message read after %v: the doorbell did not wake the consumer", k, d)
		}
	}
}

// TestProducersWithoutDoorbell: producers that do not ring the doorbell (as
// those built before it) are still read promptly: up to MaxFutexSleepers
// in FUTEX_WAIT on their write cursor, the rest polled.
func TestProducersWithoutDoorbell(t *testing.T) {
	const n = MaxFutexSleepers + 3
	dir := t.TempDir()
	ps := make([]*Producer, n)
	for i := range ps {
		ps[i] = newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("old/%d", i), Capacity: MinCapacity})
		ps[i].c.wakeCaps.Store(0) // an older producer: nothing in the padding
	}
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 10 * time.Second})
	sink.waitFor(t, "every topic", func() bool { return sink.count() == n })
	time.Sleep(100 * time.Millisecond)
	for round := range 3 {
		for i, p := range ps {
			if err := p.Publish(int64(round), []byte("x")); err != nil {
				t.Fatal(err)
			}
			id, _ := sink.topic(fmt.Sprintf("old/%d", i), "")
			sink.waitFor(t, "the message", func() bool { return len(sink.messages(id)) == round+1 })
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMaxSegments: segments beyond MaxSegments are not followed, reported
// once, counted, and followed once room frees.
func TestMaxSegments(t *testing.T) {
	dir := t.TempDir()
	ps := make([]*Producer, 10)
	for i := range ps {
		ps[i] = newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("m/%d", i), Capacity: MinCapacity})
	}
	var reports atomic.Int32
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{MaxSegments: 6, ScanInterval: 20 * time.Millisecond, NoInotify: true,
		CheckInterval: 20 * time.Millisecond, OnError: func(err error) {
			if errors.Is(err, ErrTooManySegments) {
				reports.Add(1)
			}
		}})
	sink.waitFor(t, "six topics", func() bool { return sink.count() == 6 })
	time.Sleep(200 * time.Millisecond) // about ten rescans
	if st := c.Stats(); st.Segments != 6 || st.Refused != 4 || sink.count() != 6 {
		t.Fatalf("%d followed, %d refused, %d topics; want 6, 4, 6", st.Segments, st.Refused, sink.count())
	}
	if r := reports.Load(); r != 1 {
		t.Errorf("%d reports of refused segments, want 1", r)
	}
	for i, p := range ps {
		if _, ok := sink.topic(fmt.Sprintf("m/%d", i), ""); ok {
			p.Close() // frees room
			break
		}
	}
	sink.waitFor(t, "a seventh topic", func() bool { return sink.count() == 7 })
}

// TestMaxSegmentsRoomFreesAtOnce: a refused segment is followed as soon as
// a followed one ends, not at the next rescan (an hour here; with inotify
// the safety-net rescan is ten scan intervals, 10 s by default, so a live
// producer refused for max_topics went unrecorded that long after room
// freed).
func TestMaxSegmentsRoomFreesAtOnce(t *testing.T) {
	dir := t.TempDir()
	ps := make([]*Producer, 3)
	for i := range ps {
		ps[i] = newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("r/%d", i), Capacity: MinCapacity})
	}
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{MaxSegments: 2, ScanInterval: time.Hour, CheckInterval: 20 * time.Millisecond})
	sink.waitFor(t, "two topics", func() bool { return sink.count() == 2 })
	if st := c.Stats(); st.Refused != 1 {
		t.Fatalf("%d refused, want 1", st.Refused)
	}
	for i, p := range ps {
		if _, ok := sink.topic(fmt.Sprintf("r/%d", i), ""); ok {
			p.Close() // frees room
			break
		}
	}
	sink.waitFor(t, "the refused segment followed", func() bool { return sink.count() == 3 })
	if st := c.Stats(); st.Refused != 0 || st.Segments != 2 {
		t.Fatalf("%d followed, %d refused; want 2, 0", st.Segments, st.Refused)
	}
}

// TestMaxSegmentsRemovedNotRefused: the inotify event of a segment file's
// removal, arriving while the consumer is full, refused a name that no
// longer existed; it then counted as refused (status, metrics) until the
// next rescan, ten scan intervals later.
func TestMaxSegmentsRemovedNotRefused(t *testing.T) {
	dir := t.TempDir()
	newProducer(t, dir, ProducerOptions{Name: "kept", Capacity: MinCapacity})
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{MaxSegments: 1, ScanInterval: time.Hour})
	sink.waitFor(t, "one topic", func() bool { return sink.count() == 1 })
	ghost := filepath.Join(dir, "ghost"+SegmentSuffix)
	if err := os.WriteFile(ghost, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "the new file refused", func() bool { return c.Stats().Refused == 1 })
	if err := os.Remove(ghost); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "the removed file no longer refused", func() bool { return c.Stats().Refused == 0 })
}

// count is how many topics were discovered.
func (r *recSink) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.topics)
}

// withPID rewrites a producer's segment to claim pid (before a consumer
// opens it: the field is immutable after).
func withPID(p *Producer, pid uint32) { binary.LittleEndian.PutUint32(p.mem[offPID:], pid) }

// TestUnusablePIDsGoSilent: a segment naming pid 0, 1 or 2^32-1 (no
// process of ours, or init: a producer in a container) with no heartbeat
// used to stay "alive" forever (pid 1) or be removed at once (0); its
// liveness now rests on activity: online while it publishes, offline after
// HeartbeatTimeout of silence, online again at its next record, its file
// kept. A new producer may replace it (nothing says its owner lives).
func TestUnusablePIDsGoSilent(t *testing.T) {
	for _, pid := range []uint32{0, 1, 0xFFFFFFFF} {
		t.Run(fmt.Sprint(pid), func(t *testing.T) {
			dir := t.TempDir()
			p := newProducer(t, dir, ProducerOptions{Name: "ns", Capacity: MinCapacity})
			withPID(p, pid)
			p.Publish(1, []byte("a"))
			sink := newRecSink()
			startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 10 * time.Millisecond, HeartbeatTimeout: 200 * time.Millisecond})
			id := waitTopic(t, sink, "ns", "")
			sink.waitFor(t, "the message", func() bool { return len(sink.messages(id)) == 1 })
			if !sink.isOnline(id) {
				t.Fatal("offline while publishing")
			}
			sink.waitFor(t, "offline after silence", func() bool { return !sink.isOnline(id) })
			p.Publish(2, []byte("b"))
			sink.waitFor(t, "back online", func() bool { return sink.isOnline(id) && len(sink.messages(id)) == 2 })
			if _, err := os.Stat(p.Path()); err != nil {
				t.Fatalf("segment removed: %v", err)
			}
			q, err := NewProducer(dir, ProducerOptions{Name: "ns", Capacity: MinCapacity})
			if err != nil {
				t.Fatalf("a segment of pid %d without heartbeat holds its topic: %v", pid, err)
			}
			q.Close()
		})
	}
}

// TestHeartbeatTimeout: HeartbeatTimeout (heartbeat_timeout) is how long a
// heartbeating producer may be silent: longer than its two periods here.
func TestHeartbeatTimeout(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "hb", Capacity: MinCapacity, HeartbeatPeriod: 50 * time.Millisecond})
	withPID(p, 1) // only the heartbeat says it lives
	p.Heartbeat()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 10 * time.Millisecond, HeartbeatTimeout: time.Second})
	id := waitTopic(t, sink, "hb", "")
	start := time.Now()
	time.Sleep(400 * time.Millisecond) // eight periods without a heartbeat
	if !sink.isOnline(id) {
		t.Fatalf("offline after %v, before the 1 s heartbeat_timeout", time.Since(start))
	}
	sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("offline after %v, want about 1 s", d)
	}
	p.Heartbeat()
	sink.waitFor(t, "back online", func() bool { return sink.isOnline(id) })
}

// TestLeftoverSegments: segments whose producers closed them or died
// before the consumer started are read as leftovers: counted (with their
// records), reported, removed; never ingested as live data. One that a
// producer makes and closes while the consumer runs is live data.
func TestLeftoverSegments(t *testing.T) {
	dir := t.TempDir()
	closed := newProducer(t, dir, ProducerOptions{Name: "closed", Capacity: MinCapacity})
	for i := range 5 {
		closed.Publish(int64(i), []byte("old"))
	}
	closed.Close()
	dead := startProducerProcess(t, dir, noHeartbeatEnv+"=1")
	dead.Process.Kill()
	dead.Wait()
	time.Sleep(leftoverMargin + 20*time.Millisecond) // both before the consumer starts
	var (
		mu  sync.Mutex // OnLeftover runs on the followers' goroutines, two at once here
		got []SegmentStats
	)
	done := make(chan struct{}, 2)
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{OnLeftover: func(st SegmentStats) {
		mu.Lock()
		got = append(got, st)
		mu.Unlock()
		done <- struct{}{}
	}})
	for range 2 {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("leftovers not reported")
		}
	}
	st := c.Stats()
	if st.Leftovers != 2 || st.LeftoverMessages != 105 || sink.count() != 0 {
		t.Fatalf("%d leftovers, %d messages, %d live topics; want 2, 105, 0 (%+v)", st.Leftovers, st.LeftoverMessages, sink.count(), got)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if isSegmentName(e.Name()) {
			t.Errorf("leftover %s not removed", e.Name())
		}
	}
	late, err := NewProducer(dir, ProducerOptions{Name: "late", Capacity: MinCapacity})
	if err != nil {
		t.Fatal(err)
	}
	late.Publish(1, []byte("new"))
	late.Close()
	id := waitTopic(t, sink, "late", "")
	sink.waitFor(t, "the late message", func() bool { return len(sink.messages(id)) == 1 })
	if c.Stats().Leftovers != 2 {
		t.Errorf("a segment made while the consumer runs counted as a leftover")
	}
}

// TestTwoConsumersOneDirectory: two consumers of one directory (the closed
// loop's node under test beside its collector; a viewer beside the
// recorder). One answers the doorbell, the other waits on each segment
// apart, and a publish after a long idle wakes both at once. The doorbell's
// hint bits name one consumer's readers: when both answered it, one took
// the other's wake-ups, and that one read the message only at its next
// liveness check (10 s here; 1 s in a closed loop's lockstep steps).
func TestTwoConsumersOneDirectory(t *testing.T) {
	dir := t.TempDir()
	ps := []*Producer{
		newProducer(t, dir, ProducerOptions{Name: "a", Capacity: MinCapacity}),
		newProducer(t, dir, ProducerOptions{Name: "b", Capacity: MinCapacity}),
	}
	sa, sb := newRecSink(), newRecSink()
	ca := startConsumer(t, dir, sa, ConsumerOptions{CheckInterval: 10 * time.Second, KeepFiles: true})
	cb := startConsumer(t, dir, sb, ConsumerOptions{CheckInterval: 10 * time.Second, KeepFiles: true})
	sa.waitFor(t, "both topics (a)", func() bool { return ca.Stats().Segments == 2 && sa.count() == 2 })
	sb.waitFor(t, "both topics (b)", func() bool { return cb.Stats().Segments == 2 && sb.count() == 2 })
	if !ca.Stats().Doorbell || cb.Stats().Doorbell {
		t.Fatalf("doorbell: first consumer %v, second %v; want only the first to answer it", ca.Stats().Doorbell, cb.Stats().Doorbell)
	}
	for round := range 3 {
		time.Sleep(300 * time.Millisecond) // every reader of both asleep
		for k, p := range ps {
			start := time.Now()
			if err := p.Publish(int64(round+1), []byte("wake")); err != nil {
				t.Fatal(err)
			}
			name := []string{"a", "b"}[k]
			for _, s := range []*recSink{sa, sb} {
				id, _ := s.topic(name, "")
				s.waitFor(t, "the message", func() bool { return len(s.messages(id)) == round+1 })
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("round %d, segment %s: both consumers read it after %v: a wake-up was lost", round, name, d)
			}
		}
	}
	// the doorbell is free again once its consumer closes
	ca.Close()
	cc := startConsumer(t, dir, newRecSink(), ConsumerOptions{KeepFiles: true})
	if !cc.Stats().Doorbell {
		t.Errorf("a consumer started after the first closed does not answer the doorbell: %v", cc.Stats().Errors)
	}
}
