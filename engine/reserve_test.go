package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"

	"pgregory.net/rapid"
)

// TestRecorderReserveCommitAbort: a reserved message is invisible until
// Commit, an aborted or abandoned one never appears and takes no sequence
// number, and ReserveAt rejects (and counts) what IngestAt rejects.
func TestRecorderReserveCommitAbort(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Topics: []TopicOverride{{Match: "small", MaxPacket: 100}}})
	id, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var m Message
	fill := func(dst []byte, b byte) {
		for i := range dst {
			dst[i] = b
		}
	}
	// Committed.
	dst, ok := r.ReserveAt(id, 10, 1, 300)
	if !ok || len(dst) != 300 {
		t.Fatalf("ReserveAt: %d bytes, %v", len(dst), ok)
	}
	fill(dst, 'a')
	if rd.ReadInto(&m) {
		t.Fatal("a reserved message is visible before Commit")
	}
	if !r.Commit(id) {
		t.Fatal("Commit found no reservation")
	}
	if r.Commit(id) {
		t.Fatal("a second Commit published something")
	}
	if !rd.ReadInto(&m) || m.Seq != 0 || m.CaptureNs != 10 || m.GenNs != 1 || !bytes.Equal(m.Data, bytes.Repeat([]byte{'a'}, 300)) {
		t.Fatalf("committed message read back as seq %d cap %d gen %d, %d bytes", m.Seq, m.CaptureNs, m.GenNs, len(m.Data))
	}
	// Aborted, then abandoned (dropped by the next IngestAt).
	dst, _ = r.ReserveAt(id, 11, 2, 50)
	fill(dst, 'x')
	r.Abort(id)
	if r.Commit(id) {
		t.Fatal("Commit after Abort published something")
	}
	dst, _ = r.ReserveAt(id, 12, 3, 70)
	fill(dst, 'y')
	if !r.IngestAt(id, 13, 4, []byte("next")) {
		t.Fatal("IngestAt after an abandoned reservation refused")
	}
	if r.Commit(id) {
		t.Fatal("Commit of a reservation IngestAt dropped published something")
	}
	if !rd.ReadInto(&m) || m.Seq != 1 || string(m.Data) != "next" || rd.ReadInto(&m) {
		t.Fatalf("after abort: seq %d %q, want seq 1 \"next\" and nothing more", m.Seq, m.Data)
	}
	if c := r.Topics()[id].Counters; c.Written != 2 || c.Bytes != 304 {
		t.Fatalf("counters %+v: want 2 written, 304 bytes", c)
	}
	// Rejections are IngestAt's, counted the same way.
	small, _ := r.Discover(ingest.TopicInfo{Name: "small"})
	if dst, ok := r.ReserveAt(small, 14, 0, 101); ok || dst != nil {
		t.Fatal("oversize reservation accepted")
	}
	if dst, ok := r.ReserveAt(small, 14, 0, -1); ok || dst != nil {
		t.Fatal("negative reservation accepted")
	}
	if c := r.Topics()[small].Counters; c.RejectedOversize != 2 {
		t.Fatalf("oversize reservations counted %d, want 2", c.RejectedOversize)
	}
	if _, ok := r.ReserveAt(99, 14, 0, 1); ok {
		t.Fatal("reservation for an unknown id accepted")
	}
	r.Offline(id)
	if _, ok := r.ReserveAt(id, 15, 0, 1); ok {
		t.Fatal("reservation for an offline topic accepted")
	}
	if c := r.Topics()[id].Counters; c.RejectedOffline != 1 {
		t.Fatalf("offline reservation counted %d, want 1", c.RejectedOffline)
	}
	// A MultiProducer topic takes none: the source uses IngestAt.
	mp, _ := r.Discover(ingest.TopicInfo{Name: "mp", MultiProducer: true})
	if dst, ok := r.ReserveAt(mp, 16, 0, 8); !ok || dst != nil {
		t.Fatalf("multi-producer topic: %d bytes, %v; want nil, true", len(dst), ok)
	}
	if r.Commit(mp) {
		t.Fatal("Commit on a multi-producer topic published something")
	}
}

// TestRingModelReserve is TestRingModel with reservations: each step
// appends, reserves and commits, reserves and aborts, or reserves and
// abandons (the next step drops it). A reader from the oldest entry always
// finds exactly the committed messages still held, bit-exact, in order.
func TestRingModelReserve(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := 1 << rapid.IntRange(8, 14).Draw(rt, "order")
		retention := int64(rapid.IntRange(0, 500).Draw(rt, "retention"))
		r := newTestRing(t, size, ringConfig{retentionNs: retention})
		var written [][]byte
		now := int64(0)
		steps := rapid.IntRange(1, 300).Draw(rt, "steps")
		for i := range steps {
			n := rapid.IntRange(0, size).Draw(rt, "n")
			now += int64(rapid.IntRange(0, 50).Draw(rt, "dt"))
			op := rapid.IntRange(0, 3).Draw(rt, "op") // append, commit, abort, abandon
			p := payload(i, n)
			fits := uint64(n) <= uint64(size)-entryHeaderSize
			if op == 0 {
				if ok := r.append(now, int64(i), p); ok != fits {
					rt.Fatalf("append(%d bytes) into %d = %v", n, size, ok)
				}
			} else {
				dst, ok := r.reserve(now, int64(i), uint64(n))
				if ok != fits || ok && len(dst) != n {
					rt.Fatalf("reserve(%d bytes) into %d = %d bytes, %v", n, size, len(dst), ok)
				}
				copy(dst, p)
				switch op {
				case 1:
					if r.commit() != ok {
						rt.Fatalf("commit after reserve %v", ok)
					}
				case 2:
					r.abort()
				}
			}
			if fits && (op == 0 || op == 1) {
				written = append(written, p)
			}
			c := &cursor{r: r}
			c.seekOldest()
			got := drain(c)
			first := len(written) - len(got)
			for k, m := range got {
				if m.Seq != uint64(first+k) || !bytes.Equal(m.Data, written[first+k]) {
					rt.Fatalf("entry %d: seq %d, want %d", k, m.Seq, first+k)
				}
			}
			if c.lost != 0 {
				rt.Fatalf("single-threaded reader lost %d", c.lost)
			}
			if w := r.counters().Written; w != uint64(len(written)) {
				rt.Fatalf("counters say %d written, committed %d", w, len(written))
			}
			nc := &cursor{r: r}
			nc.seekNewest()
			if _, ok := nc.peek(); ok {
				rt.Fatal("a cursor at the newest entry sees one more")
			}
		}
	})
}

// stressPayload fills dst (len >= 16) with index k, filler and a CRC32C of
// everything before it; aborted says whether the writer will abort it.
func stressPayload(dst []byte, k uint64, aborted bool) {
	if aborted {
		k |= 1 << 63
	}
	binary.LittleEndian.PutUint64(dst, k)
	x := uint32(k) | 1
	for i := 8; i < len(dst)-4; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		dst[i] = byte(x)
	}
	binary.LittleEndian.PutUint32(dst[len(dst)-4:], crc32.Checksum(dst[:len(dst)-4], crc32.MakeTable(crc32.Castagnoli)))
}

func verifyStressPayload(p []byte) (uint64, error) {
	if len(p) < 16 {
		return 0, fmt.Errorf("%d bytes", len(p))
	}
	n := len(p)
	if crc32.Checksum(p[:n-4], crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(p[n-4:]) {
		return 0, fmt.Errorf("checksum mismatch (claims %#x)", binary.LittleEndian.Uint64(p))
	}
	k := binary.LittleEndian.Uint64(p)
	if k&(1<<63) != 0 {
		return 0, fmt.Errorf("an aborted message (index %d) is visible", k&^(1<<63))
	}
	return k, nil
}

// TestReserveAbortInvisibleToConcurrentReaders: one writer reserves
// messages of varied sizes (up to a third of the ring, so reservations
// often empty the ring and wrap) and commits, aborts or abandons them,
// filling the aborted ones with a payload marked aborted, while readers of
// different speeds read concurrently. Every message a reader returns
// verifies, is a committed one, in order, and delivered + lost equals the
// committed count for every reader.
func TestReserveAbortInvisibleToConcurrentReaders(t *testing.T) {
	total := uint64(200_000)
	if testing.Short() || raceEnabled {
		total = 30_000
	}
	const size = 64 << 10
	r := newTestRing(t, size, ringConfig{})
	stop := startStressReaders(t, r, 3, 16, verifyStressPayload)
	committed := uint64(0)
	x := uint64(12345)
	for i := range total {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		n := 16 + x%(size/3)
		if x%16 != 0 {
			n = 16 + x%2048 // mostly small, now and then a third of the ring
		}
		op := x >> 60 % 4 // 0, 1: commit; 2: abort; 3: abandon
		dst, ok := r.reserve(int64(i), 0, n)
		if !ok {
			t.Fatalf("reserve %d of %d bytes refused", i, n)
		}
		stressPayload(dst, committed, op >= 2)
		switch op {
		case 0, 1:
			r.commit()
			committed++
		case 2:
			r.abort()
		}
	}
	r.abort()
	for k, res := range stop() {
		if res.delivered+res.lost != committed {
			t.Errorf("reader %d: delivered %d + lost %d != committed %d", k, res.delivered, res.lost, committed)
		}
		t.Logf("reader %d: delivered %d, lost %d of %d committed (%d reserved)", k, res.delivered, res.lost, committed, total)
	}
	if w := r.counters().Written; w != committed {
		t.Errorf("ring counts %d written, committed %d", w, committed)
	}
}

// TestRecorderAbortInvisibleToConcurrentReader is the same through the
// public API: a source reserves with Recorder.ReserveAt and commits or
// aborts while a Reader follows the topic on another goroutine; the Reader
// never returns an aborted message, and delivered + lost = committed.
func TestRecorderAbortInvisibleToConcurrentReader(t *testing.T) {
	total := uint64(100_000)
	if testing.Short() || raceEnabled {
		total = 20_000
	}
	r, _ := newTestRecorder(t, Config{TopicBytes: 64 << 10})
	id, err := r.Discover(ingest.TopicInfo{Name: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var committed atomic.Uint64
	done := make(chan struct{})
	errc := make(chan error, 1)
	var delivered uint64
	go func() {
		defer close(errc)
		var m Message
		lastSeq := int64(-1)
		finish := false
		for {
			select {
			case <-done:
				finish = true
			default:
			}
			runtime.Gosched() // see TestRingStressIntegrity: spinning readers under qemu-user
			for rd.ReadInto(&m) {
				idx, err := verifyStressPayload(m.Data)
				if err != nil || idx != m.Seq || int64(m.Seq) <= lastSeq {
					errc <- fmt.Errorf("seq %d after %d, payload index %d: %v", m.Seq, lastSeq, idx, err)
					return
				}
				lastSeq = int64(m.Seq)
				delivered++
			}
			if finish {
				return
			}
		}
	}()
	x := uint64(99)
	for i := range total {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		n := int(16 + x%(8<<10))
		dst, ok := r.ReserveAt(id, int64(i), 0, n)
		if !ok || len(dst) != n {
			t.Fatalf("ReserveAt %d of %d bytes: %d, %v", i, n, len(dst), ok)
		}
		abort := x>>62 == 0 // a quarter aborted
		stressPayload(dst, committed.Load(), abort)
		if abort {
			r.Abort(id)
		} else if r.Commit(id) {
			committed.Add(1)
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if delivered+rd.Lost() != committed.Load() {
		t.Fatalf("delivered %d + lost %d != committed %d", delivered, rd.Lost(), committed.Load())
	}
	t.Logf("%d reserved, %d committed: %d delivered, %d lost", total, committed.Load(), delivered, rd.Lost())
}
