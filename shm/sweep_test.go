package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"os"
	"sync"
	"testing"
	"time"
)

// TestSweepWakesPerPeriodNotPerMessage: busy producers publishing a
// message a millisecond each ring the doorbell for about every message
// when the consumer reads each as it comes (Sweep 0, a wake-up of the
// consumer per message), and barely at all with Sweep (their segments are
// read together every period, the consumer never asleep on them); every
// message arrives, in order, either way.
func TestSweepWakesPerPeriodNotPerMessage(t *testing.T) {
	const producers, n = 8, 150
	for _, tc := range []struct {
		name  string
		sweep time.Duration
	}{{"per message", 0}, {"sweep", 2 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sweep == 0 {
				// whether the per-message consumer sleeps between messages
				// 1 ms apart is a matter of speed: an emulated CPU is still
				// reading when the next comes (8 rings for 1200 under qemu)
				testutil.SkipUnderEmulation(t, "the per-message consumer's wake-ups depend on the CPU's speed")
			}
			dir := t.TempDir()
			sink := newRecSink()
			c := startConsumer(t, dir, sink, ConsumerOptions{Sweep: tc.sweep, CheckInterval: 10 * time.Second})
			ps := make([]*Producer, producers)
			for k := range ps {
				ps[k] = newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("busy/%d", k), Capacity: MinCapacity})
			}
			sink.waitFor(t, "every topic", func() bool { return sink.count() == producers })
			if c.bell == nil {
				t.Fatalf("no doorbell: %v", c.Stats().Errors)
			}
			rings0 := c.bell.rings.Load()
			var wg sync.WaitGroup
			for _, p := range ps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var b [8]byte
					for i := range uint64(n) {
						binary.LittleEndian.PutUint64(b[:], i)
						p.Publish(int64(i), b[:])
						time.Sleep(time.Millisecond)
					}
				}()
			}
			wg.Wait()
			for k := range ps {
				id := waitTopic(t, sink, fmt.Sprintf("busy/%d", k), "")
				sink.waitFor(t, "every message", func() bool { return len(sink.messages(id)) == n })
				for i, m := range sink.messages(id) {
					if got := binary.LittleEndian.Uint64(m.payload); got != uint64(i) {
						t.Fatalf("topic %d: message %d holds %d", k, i, got)
					}
				}
			}
			rings := c.bell.rings.Load() - rings0
			t.Logf("%d messages, %d doorbell rings", producers*n, rings)
			if tc.sweep == 0 && rings < producers*n/10 {
				t.Errorf("%d rings for %d messages: the per-message consumer was not asleep between them?", rings, producers*n)
			}
			if tc.sweep > 0 && rings > 4*producers {
				t.Errorf("%d rings for %d messages of %d busy segments: the swept consumer is woken per message", rings, producers*n, producers)
			}
		})
	}
}

// TestSweepProducerCloses: a producer that closes its segment while the
// sweeper reads it is seen: every message arrives, the topic goes offline
// and the file is removed; then Close of the consumer ends the sweeper
// (TestMain's leak check).
func TestSweepProducerCloses(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	c := startConsumer(t, dir, sink, ConsumerOptions{Sweep: time.Millisecond})
	p := newProducer(t, dir, ProducerOptions{Name: "imu"})
	q := newProducer(t, dir, ProducerOptions{Name: "gps"})
	id := waitTopic(t, sink, "imu", "")
	idq := waitTopic(t, sink, "gps", "")
	for i := range 100 {
		p.Publish(int64(i), []byte("last words"))
		q.Publish(int64(i), []byte("still here"))
		time.Sleep(200 * time.Microsecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
	if got := len(sink.messages(id)); got != 100 {
		t.Errorf("got %d messages before offline, want 100", got)
	}
	sink.waitFor(t, "file removal", func() bool {
		_, err := os.Stat(p.Path())
		return errors.Is(err, os.ErrNotExist)
	})
	sink.waitFor(t, "gps", func() bool { return len(sink.messages(idq)) == 100 })
	for i := range 100 { // the consumer stops while gps is being read
		q.Publish(int64(i), []byte("more"))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepStressLappingReadsNeverTorn is TestStressLappingReadsNeverTorn
// through a consumer that sweeps: the producer laps it constantly, so the
// segment passes between the sweeper (caught up) and its follower (a
// backlog) all the time; every message handed on is intact and in order,
// received + lost = published.
func TestSweepStressLappingReadsNeverTorn(t *testing.T) {
	n := uint64(200_000)
	if testing.Short() {
		n /= 10
	}
	stressOpts(t, &checkSink{maxLen: 700}, n, 700, 16<<10, false, ConsumerOptions{BatchBytes: 1, Sweep: time.Millisecond})
}
