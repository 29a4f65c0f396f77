package engine

import (
	"bytes"
	"math"
	"testing"

	"github.com/edr-lite/edr-lite/arena"
	"github.com/edr-lite/edr-lite/internal/checkpayload"

	"pgregory.net/rapid"
)

// newTestRing makes a ring of size bytes in a fresh arena.
func newTestRing(t testing.TB, size int, cfg ringConfig) *ring {
	t.Helper()
	a, err := arena.New(arena.Options{Size: int64(size), MinBlock: 256})
	if err != nil {
		t.Fatalf("arena.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := a.Alloc(size)
	if err != nil {
		t.Fatalf("Alloc: %v", err)
	}
	r, err := newRing(b.Bytes(), cfg)
	if err != nil {
		t.Fatalf("newRing: %v", err)
	}
	return r
}

// payload returns a deterministic payload of n bytes for message i.
func payload(i, n int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = byte(i*7 + j)
	}
	return p
}

// drain reads everything from c.
func drain(c *cursor) []Message {
	var out []Message
	for {
		var m Message
		if !c.readInto(&m, math.MaxInt64) {
			return out
		}
		out = append(out, m)
	}
}

func TestRingAppendRead(t *testing.T) {
	r := newTestRing(t, 4096, ringConfig{})
	for i := range 10 {
		if !r.append(int64(1000+i), int64(i), payload(i, i*3)) {
			t.Fatalf("append %d rejected", i)
		}
	}
	c := &cursor{r: r}
	c.seekOldest()
	got := drain(c)
	if len(got) != 10 {
		t.Fatalf("read %d messages, want 10", len(got))
	}
	for i, m := range got {
		if m.Seq != uint64(i) || m.CaptureNs != int64(1000+i) || m.GenNs != int64(i) || !bytes.Equal(m.Data, payload(i, i*3)) {
			t.Fatalf("message %d = seq %d cap %d gen %d len %d", i, m.Seq, m.CaptureNs, m.GenNs, len(m.Data))
		}
	}
	cn := r.counters()
	if cn.Written != 10 || cn.Bytes != 135 || cn.HeldMessages != 10 || cn.OldestNs != 1000 || cn.NewestNs != 1009 {
		t.Fatalf("counters = %+v", cn)
	}
	if c.lost != 0 {
		t.Fatalf("lost = %d", c.lost)
	}
}

func TestRingCaptureTimeNeverGoesBack(t *testing.T) {
	r := newTestRing(t, 4096, ringConfig{})
	r.append(100, 0, []byte("a"))
	r.append(50, 0, []byte("b"))
	c := &cursor{r: r}
	c.seekOldest()
	got := drain(c)
	if got[1].CaptureNs != 100 {
		t.Fatalf("second capture = %d, want clamped to 100", got[1].CaptureNs)
	}
}

func TestRingOversize(t *testing.T) {
	f := func(size, maxPacket, n int, want bool) {
		t.Helper()
		r := newTestRing(t, size, ringConfig{maxPacket: maxPacket})
		if got := r.append(1, 0, make([]byte, n)); got != want {
			t.Fatalf("ring %d max %d: append(%d bytes) = %v, want %v", size, maxPacket, n, got, want)
		}
		cn := r.counters()
		if want && (cn.Written != 1 || cn.RejectedOversize != 0) || !want && (cn.Written != 0 || cn.RejectedOversize != 1) {
			t.Fatalf("counters = %+v", cn)
		}
	}
	f(1024, 0, 1024-entryHeaderSize, true)
	f(1024, 0, 1024-entryHeaderSize+1, false)
	f(1024, 100, 100, true)
	f(1024, 100, 101, false)
	f(1024, 5000, 1000, false) // the ring, not max packet, limits
}

func TestRingEvictBySize(t *testing.T) {
	r := newTestRing(t, 1024, ringConfig{})
	const n = 1000
	for i := range n {
		r.append(int64(i), 0, payload(i, 1+i%50))
	}
	cn := r.counters()
	if cn.Written != n || cn.EvictedSize+cn.HeldMessages != n || cn.HeldBytes > 1024 {
		t.Fatalf("counters = %+v", cn)
	}
	c := &cursor{r: r}
	c.seekOldest()
	got := drain(c)
	if uint64(len(got)) != cn.HeldMessages || got[len(got)-1].Seq != n-1 {
		t.Fatalf("read %d (last seq %d), held %d", len(got), got[len(got)-1].Seq, cn.HeldMessages)
	}
	for k, m := range got {
		i := int(m.Seq)
		if k > 0 && m.Seq != got[k-1].Seq+1 || !bytes.Equal(m.Data, payload(i, 1+i%50)) {
			t.Fatalf("entry %d seq %d corrupt or out of order", k, m.Seq)
		}
	}
}

func TestRingEvictByAgeKeepLast(t *testing.T) {
	f := func(keepLast uint64, wantHeld uint64) {
		t.Helper()
		r := newTestRing(t, 1<<16, ringConfig{retentionNs: 1000, keepLast: keepLast})
		for i := range 20 {
			r.append(int64(i*10), 0, []byte{byte(i)}) // 0..190 ns
		}
		// A message 10 s later makes everything before it too old.
		r.append(10_000_000_000, 0, []byte{99})
		cn := r.counters()
		if cn.HeldMessages != wantHeld || cn.EvictedAge != 21-wantHeld {
			t.Fatalf("keepLast %d: counters = %+v, want %d held", keepLast, cn, wantHeld)
		}
	}
	f(0, 1)
	f(5, 5)
	f(100, 21)
}

func TestRingReaderFallsBehind(t *testing.T) {
	r := newTestRing(t, 1024, ringConfig{})
	c := &cursor{r: r}
	c.seekOldest()
	var m Message
	delivered := uint64(0)
	for i := range 500 {
		r.append(int64(i), 0, payload(i, 20))
		if i%37 == 0 {
			for c.readInto(&m, math.MaxInt64) {
				delivered++
				if !bytes.Equal(m.Data, payload(int(m.Seq), 20)) {
					t.Fatalf("seq %d corrupt", m.Seq)
				}
			}
		}
	}
	for c.readInto(&m, math.MaxInt64) {
		delivered++
	}
	if c.lost == 0 || delivered+c.lost != 500 || r.counters().LostToReaders != c.lost {
		t.Fatalf("delivered %d + lost %d != 500 (ring lost %d)", delivered, c.lost, r.counters().LostToReaders)
	}
}

func TestRingSeek(t *testing.T) {
	r := newTestRing(t, 1<<14, ringConfig{})
	c := &cursor{r: r}
	c.seekNewest()
	if c.readInto(&Message{}, math.MaxInt64) {
		t.Fatal("empty ring returned a message")
	}
	for i := range 100 {
		r.append(int64(i*100), 0, payload(i, 8))
	}
	c.seekTime(4950)
	var m Message
	if !c.readInto(&m, math.MaxInt64) || m.Seq != 50 || m.CaptureNs != 5000 {
		t.Fatalf("seekTime(4950) read seq %d at %d, want 50 at 5000", m.Seq, m.CaptureNs)
	}
	c.seekTime(1 << 40)
	if c.readInto(&m, math.MaxInt64) {
		t.Fatal("seekTime past the end returned a message")
	}
	c.seekNewest()
	r.append(20000, 0, []byte("new"))
	if !c.readInto(&m, math.MaxInt64) || string(m.Data) != "new" || m.Seq != 100 {
		t.Fatalf("after seekNewest read %q seq %d", m.Data, m.Seq)
	}
	if c.lost != 0 {
		t.Fatalf("lost = %d", c.lost)
	}
}

// TestRingModel: whatever the sequence of message sizes and times, a reader
// from the oldest entry returns a gap-free suffix of what was written, ending
// with the newest message, within the byte cap, each payload intact.
func TestRingModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := 1 << rapid.IntRange(8, 14).Draw(rt, "order")
		retention := int64(rapid.IntRange(0, 500).Draw(rt, "retention"))
		keep := uint64(rapid.IntRange(0, 4).Draw(rt, "keepLast"))
		r := newTestRing(t, size, ringConfig{retentionNs: retention, keepLast: keep})
		var written [][]byte
		now, newest := int64(0), int64(0)
		steps := rapid.IntRange(1, 300).Draw(rt, "steps")
		for i := range steps {
			n := rapid.IntRange(0, size).Draw(rt, "n")
			now += int64(rapid.IntRange(0, 50).Draw(rt, "dt"))
			p := payload(i, n)
			ok := r.append(now, int64(i), p)
			if ok != (uint64(n) <= uint64(size)-entryHeaderSize) {
				rt.Fatalf("append(%d bytes) into %d = %v", n, size, ok)
			}
			if ok {
				written = append(written, p)
				newest = now
			}
			c := &cursor{r: r}
			c.seekOldest()
			got := drain(c)
			if len(written) > 0 && len(got) == 0 {
				rt.Fatalf("ring holds nothing after %d messages", len(written))
			}
			first := len(written) - len(got)
			held := uint64(0)
			for k, m := range got {
				if m.Seq != uint64(first+k) || !bytes.Equal(m.Data, written[first+k]) {
					rt.Fatalf("entry %d: seq %d, want %d (intact %v)", k, m.Seq, first+k, bytes.Equal(m.Data, written[m.Seq]))
				}
				if retention > 0 && uint64(len(got)-k) > keep && k < len(got)-1 && m.CaptureNs < newest-retention-retention/32-1 {
					rt.Fatalf("entry seq %d at %d kept beyond retention %d (newest %d)", m.Seq, m.CaptureNs, retention, newest)
				}
				held += entrySize(uint64(len(m.Data)))
			}
			if held > uint64(size) {
				rt.Fatalf("held %d bytes in a %d-byte ring", held, size)
			}
			if c.lost != 0 {
				rt.Fatalf("single-threaded reader lost %d", c.lost)
			}
		}
	})
}

// TestRingStressIntegrity: one writer, several concurrent readers of
// different speeds; every payload returned verifies, and for every reader
// delivered + lost == written over its range.
func TestRingStressIntegrity(t *testing.T) {
	total := uint64(1_000_000)
	if testing.Short() {
		total = 100_000
	}
	r := newTestRing(t, 64<<10, ringConfig{})
	stop := startStressReaders(t, r, 4, 64, checkpayload.Verify)
	buf := make([]byte, checkpayload.MaxLen)
	for seq := range total {
		if !r.append(int64(seq), 0, checkpayload.Fill(buf, seq)) {
			t.Fatalf("append %d rejected", seq)
		}
	}
	var lostAll uint64
	for k, res := range stop() {
		if res.delivered+res.lost != total {
			t.Errorf("reader %d: delivered %d + lost %d != written %d", k, res.delivered, res.lost, total)
		}
		lostAll += res.lost
		t.Logf("reader %d: delivered %d, lost %d", k, res.delivered, res.lost)
	}
	if got := r.counters().LostToReaders; got != lostAll {
		t.Errorf("ring LostToReaders = %d, readers lost %d", got, lostAll)
	}
}

// TestRingEvictLargeEntries: with entries spanning many segments, eviction
// for space still keeps what fits instead of emptying the ring.
func TestRingEvictLargeEntries(t *testing.T) {
	f := func(size, n int, minHeld uint64) {
		t.Helper()
		r := newTestRing(t, size, ringConfig{})
		for i := range 50 {
			r.append(int64(i), 0, payload(i, n))
			if c := r.counters(); c.HeldMessages < min(minHeld, uint64(i+1)) {
				t.Fatalf("ring %d, %d-byte entries: after %d appends holds %d, want >= %d", size, n, i+1, c.HeldMessages, minHeld)
			}
		}
	}
	f(8192, 2000, 2)
	f(8192, 4000, 2)
	f(1<<16, 20000, 2)
	f(1<<16, 1000, 50)
}
