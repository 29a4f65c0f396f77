package shm

import (
	"errors"
	"testing"
)

// TestReserveCommit: messages written in place through Reserve and Commit
// (some shorter than reserved, some wrapping the ring's end, reservations
// dropped between them) reach the recorder bit-exact and in order, and
// nothing of a dropped reservation does.
func TestReserveCommit(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	const n, maxLen = 3000, 700
	p := newProducer(t, dir, ProducerOptions{Name: "camera/front", Capacity: 256 << 10})
	want := make([]byte, maxLen)
	for i := range uint64(n) {
		if i%5 == 0 { // a reservation dropped: written, never committed
			buf, err := p.Reserve(maxLen)
			if err != nil {
				t.Fatal(err)
			}
			for j := range buf {
				buf[j] = 0xEE
			}
		}
		m := payloadFor(want, i, maxLen)
		size := maxLen
		if i%3 == 0 {
			size = len(m) // reserve exactly; otherwise commit less than reserved
		}
		buf, err := p.Reserve(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) != size || cap(buf) != size {
			t.Fatalf("Reserve(%d): len %d cap %d", size, len(buf), cap(buf))
		}
		copy(buf, m)
		if err := p.Commit(int64(1000+i), len(m)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 { // let the consumer keep up: this test is about content, not loss
			id := waitTopic(t, sink, "camera/front", "")
			sink.waitFor(t, "the consumer", func() bool { return len(sink.messages(id)) == int(i)+1 })
		}
	}
	id := waitTopic(t, sink, "camera/front", "")
	sink.waitFor(t, "all messages", func() bool { return len(sink.messages(id)) == n })
	for i, m := range sink.messages(id) {
		got, err := checkPayload(m.payload, maxLen)
		if err != nil || got != uint64(i) || m.gen != int64(1000+i) {
			t.Fatalf("message %d: index %d, gen %d, %v", i, got, m.gen, err)
		}
	}
	if st := p.Stats(); st.Published != n {
		t.Errorf("published %d, want %d (dropped reservations are not messages)", st.Published, n)
	}
}

func TestReserveCommitErrors(t *testing.T) {
	p := newProducer(t, t.TempDir(), ProducerOptions{Name: "cam", MaxPayload: 100})
	if err := p.Commit(1, 0); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("Commit without Reserve: %v, want ErrNoReservation", err)
	}
	if _, err := p.Reserve(101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Reserve(101) with MaxPayload 100: %v, want ErrTooLarge", err)
	}
	if _, err := p.Reserve(-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Reserve(-1): %v, want ErrTooLarge", err)
	}
	if _, err := p.Reserve(10); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(1, 11); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("Commit of 11 bytes of 10 reserved: %v, want ErrNoReservation", err)
	}
	if err := p.Commit(1, 0); err != nil { // an empty message is a message
		t.Fatal(err)
	}
	if err := p.Commit(2, 0); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("a second Commit: %v, want ErrNoReservation", err)
	}
	if _, err := p.Reserve(10); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(3, []byte("x")); err != nil { // drops the reservation
		t.Fatal(err)
	}
	if err := p.Commit(4, 1); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("Commit after Publish: %v, want ErrNoReservation", err)
	}
	if st := p.Stats(); st.Published != 2 || st.Oversize != 2 {
		t.Errorf("stats %+v, want 2 published, 2 oversize", st)
	}
	if _, err := p.Reserve(10); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.Reserve(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reserve after Close: %v", err)
	}
	if err := p.Commit(1, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
}
