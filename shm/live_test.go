package shm

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestLiveCorruptionQuarantinesOnlyThatSegment scribbles on a live
// segment's header (a test writer standing in for a buggy producer): that
// segment is quarantined with an error naming it, the field and the offset,
// its topic goes offline, and another segment keeps recording.
// With a consumer that sweeps, the corruption is found by the sweeper's read
// (or the follower's check) alike.
func TestLiveCorruptionQuarantinesOnlyThatSegment(t *testing.T) {
	for _, sweep := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("sweep=%v", sweep), func(t *testing.T) { liveCorruption(t, sweep) })
	}
}

func liveCorruption(t *testing.T, sweep time.Duration) {
	for _, tc := range []struct {
		name  string
		off   int64
		bytes []byte
		field string
		cut   bool
	}{
		{name: "magic", off: 0, bytes: []byte("GARBAGE!"), field: "magic"},
		{name: "capacity", off: offCapacity, bytes: u64(1 << 20), field: "capacity"},
		{name: "write cursor backwards", off: offWriteCursor, bytes: u64(8), field: "write_cursor"},
		{name: "truncated while mapped", cut: true, field: "file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cut {
				testutil.SkipUnderEmulation(t, truncatedSIGBUSUnderQEMU)
			}
			dir := t.TempDir()
			sink := newRecSink()
			errc := make(chan error, 16)
			c := startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 20 * time.Millisecond, Sweep: sweep, OnError: func(err error) { errc <- err }})
			a := newProducer(t, dir, ProducerOptions{Name: "a", Capacity: MinCapacity})
			b := newProducer(t, dir, ProducerOptions{Name: "b"})
			idA, idB := waitTopic(t, sink, "a", ""), waitTopic(t, sink, "b", "")
			for i := range 10 {
				a.Publish(int64(i), []byte("from a"))
				b.Publish(int64(i), []byte("from b"))
			}
			sink.waitFor(t, "10 messages each", func() bool {
				return len(sink.messages(idA)) == 10 && len(sink.messages(idB)) == 10
			})
			if tc.cut {
				// The producer must not write to the cut mapping; move its
				// cursor by hand so the consumer reads past the end of file.
				if err := os.Truncate(a.Path(), HeaderSize); err != nil {
					t.Fatal(err)
				}
				a.c.write.Store(a.w + 64)
				a.closed = true // keep the test's producer off the cut ring
				futexWake(a.c.futex)
			} else {
				writeAt(t, a.Path(), tc.off, tc.bytes)
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				t.Fatal("no quarantine error")
			}
			var se *SegmentError
			if !errors.As(err, &se) || se.Segment != a.Path() || se.Field != tc.field {
				t.Fatalf("got %v, want a SegmentError on %s field %s", err, a.Path(), tc.field)
			}
			if se.Field != "file" && se.Offset != tc.off {
				t.Errorf("offset %d, want %d", se.Offset, tc.off)
			}
			sink.waitFor(t, "a offline", func() bool { return !sink.isOnline(idA) })
			for i := range 10 {
				b.Publish(int64(i), []byte("still here"))
			}
			sink.waitFor(t, "b keeps recording", func() bool { return len(sink.messages(idB)) == 20 })
			if st := c.Stats(); st.Quarantined != 1 || st.Segments != 2 {
				t.Errorf("stats %+v, want 1 of 2 segments quarantined", st)
			}
		})
	}
}
