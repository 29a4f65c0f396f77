package shm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestProducerRestartKeepsTopic: a producer closes and a new one for the
// same topic starts, with the old file either removed by the consumer or
// still there (KeepFiles) and renamed over: the topic keeps its id, comes
// back online and every message of both producers is recorded in order.
func TestProducerRestartKeepsTopic(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepFiles=%v", keep), func(t *testing.T) {
			dir := t.TempDir()
			sink := newRecSink()
			startConsumer(t, dir, sink, ConsumerOptions{KeepFiles: keep})
			p1 := newProducer(t, dir, ProducerOptions{Name: "restart"})
			id := waitTopic(t, sink, "restart", "")
			for i := range 5 {
				p1.Publish(int64(i), []byte{byte(i)})
			}
			p1.Close()
			sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
			if keep {
				if _, err := os.Stat(p1.Path()); err != nil {
					t.Fatalf("KeepFiles but the file is gone: %v", err)
				}
			} else {
				sink.waitFor(t, "file removal", func() bool {
					_, err := os.Stat(p1.Path())
					return errors.Is(err, os.ErrNotExist)
				})
			}
			p2 := newProducer(t, dir, ProducerOptions{Name: "restart"})
			sink.waitFor(t, "back online", func() bool { return sink.isOnline(id) })
			for i := 5; i < 10; i++ {
				p2.Publish(int64(i), []byte{byte(i)})
			}
			sink.waitFor(t, "10 messages", func() bool { return len(sink.messages(id)) == 10 })
			for i, m := range sink.messages(id) {
				if m.payload[0] != byte(i) {
					t.Fatalf("message %d is %d", i, m.payload[0])
				}
			}
			if got, _ := sink.topic("restart", ""); got != id {
				t.Errorf("new id %d, want %d", got, id)
			}
		})
	}
}

// TestStaleHeartbeatOfflineThenBack drives both clocks by hand: a heartbeat
// older than two periods takes the topic offline; a fresh one brings it
// back.
func TestStaleHeartbeatOfflineThenBack(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{Clock: clk})
	p := newProducer(t, dir, ProducerOptions{Name: "hb", HeartbeatPeriod: 20 * time.Millisecond, Clock: clk})
	id := waitTopic(t, sink, "hb", "")
	clk.Advance(time.Second)
	sink.waitFor(t, "offline on a stale heartbeat", func() bool { return !sink.isOnline(id) })
	p.Heartbeat()
	sink.waitFor(t, "online again", func() bool { return sink.isOnline(id) })
	p.Publish(1, []byte("after"))
	sink.waitFor(t, "message", func() bool { return len(sink.messages(id)) == 1 })
}

// TestRefusedTopicSkippedAndCleanedUp: a topic the sink refuses is never
// ingested, the refusal is reported, and its file is still removed once
// the producer closes.
func TestRefusedTopicSkippedAndCleanedUp(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	sink.refuse = func(info ingest.TopicInfo) error {
		if info.Name == "secret" {
			return errors.New("excluded by glob")
		}
		return nil
	}
	errc := make(chan error, 4)
	c := startConsumer(t, dir, sink, ConsumerOptions{OnError: func(err error) { errc <- err }})
	p := newProducer(t, dir, ProducerOptions{Name: "secret"})
	select {
	case err := <-errc:
		if !strings.Contains(err.Error(), "excluded by glob") || !strings.Contains(err.Error(), p.Path()) {
			t.Errorf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error for a refused topic")
	}
	p.Publish(1, []byte("x"))
	p.Close()
	sink.waitFor(t, "file removed", func() bool {
		_, err := os.Stat(p.Path())
		return errors.Is(err, os.ErrNotExist)
	})
	if st := c.Stats(); st.Messages != 0 {
		t.Errorf("stats %+v: refused topic ingested", st)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	c, err := NewConsumer(t.TempDir(), newRecSink(), ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

// TestCloseLeavesNothingRunning: after Close, no consumer goroutine (segment
// followers, directory watcher, inotify reader) is left behind.
func TestCloseLeavesNothingRunning(t *testing.T) {
	testutil.VerifyNone(t)
	dir := t.TempDir()
	sink := newRecSink()
	c, err := NewConsumer(dir, sink, ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(dir, ProducerOptions{Name: "leak"})
	if err != nil {
		t.Fatal(err)
	}
	id := waitTopic(t, sink, "leak", "")
	p.Publish(1, []byte("x"))
	sink.waitFor(t, "message", func() bool { return len(sink.messages(id)) == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSkipExisting: with SkipExisting the consumer ingests only what is
// published after Start: a live segment's earlier records and a closed
// segment's records are skipped (and not counted as lost), a segment
// created later is read from its first record.
func TestSkipExisting(t *testing.T) {
	dir := t.TempDir()
	live := newProducer(t, dir, ProducerOptions{Name: "live", Capacity: 4096})
	for i := 0; i < 200; i++ { // laps the 4 KiB ring: the tail has moved
		live.Publish(int64(i), []byte{byte(i), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	}
	old := newProducer(t, dir, ProducerOptions{Name: "old"})
	old.Publish(1, []byte("stale"))
	old.Close()
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{SkipExisting: true, KeepFiles: true})
	for i := 200; i < 203; i++ {
		live.Publish(int64(i), []byte{byte(i)})
	}
	fresh := newProducer(t, dir, ProducerOptions{Name: "fresh"})
	fresh.Publish(7, []byte("a"))
	fresh.Publish(8, []byte("b"))
	sink.waitFor(t, "the records published after Start", func() bool {
		l, ok1 := sink.topic("live", "")
		f, ok2 := sink.topic("fresh", "")
		return ok1 && ok2 && len(sink.messages(l)) == 3 && len(sink.messages(f)) == 2
	})
	l, _ := sink.topic("live", "")
	for i, m := range sink.messages(l) {
		if m.gen != int64(200+i) {
			t.Errorf("live message %d: gen %d, want %d", i, m.gen, 200+i)
		}
	}
	// the closed segment's stale record never arrives
	sink.waitFor(t, "the old segment to be read to its end", func() bool {
		for _, s := range c.Segments() {
			if s.Topic.Name == "old" {
				return false
			}
		}
		return true
	})
	if o, ok := sink.topic("old", ""); ok && len(sink.messages(o)) != 0 {
		t.Errorf("old: %d stale records ingested", len(sink.messages(o)))
	}
	if st := c.Stats(); st.Lost != 0 || st.Messages != 5 {
		t.Errorf("stats %+v: want 5 messages, none lost", st)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for id, n := range sink.lost {
		t.Errorf("topic %d: %d reported lost", id, n)
	}
}
