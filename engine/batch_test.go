package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"

	"pgregory.net/rapid"
)

// batchOf lays payloads out in one source buffer, as a shm segment holds
// them, and describes them as a run.
func batchOf(ps [][]byte, gen int64) ([]byte, []ingest.BatchMessage) {
	var src []byte
	msgs := make([]ingest.BatchMessage, len(ps))
	for i, p := range ps {
		src = append(src, make([]byte, 24)...) // a record header between payloads
		msgs[i] = ingest.BatchMessage{GenNs: gen + int64(i), Off: uint32(len(src)), Len: uint32(len(p))}
		src = append(src, p...)
	}
	return src, msgs
}

// TestRingModelBatch is TestRingModel with staged runs: each step appends,
// reserves and commits, or stages a run of 1-40 messages and commits,
// aborts or abandons it (the next step drops it). A reader from the oldest
// entry always finds exactly the committed messages still held, bit-exact,
// in order, with their capture and producer times; the counters agree; a
// cursor at the newest entry sees nothing more. Small rings make runs
// wrap, evict everything committed and stop short (the run may not
// overwrite its own first entry).
func TestRingModelBatch(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := 1 << rapid.IntRange(8, 14).Draw(rt, "order")
		retention := int64(rapid.IntRange(0, 500).Draw(rt, "retention"))
		keep := uint64(rapid.IntRange(0, 4).Draw(rt, "keepLast"))
		maxPacket := rapid.IntRange(0, size).Draw(rt, "maxPacket")
		r := newTestRing(t, size, ringConfig{retentionNs: retention, keepLast: keep, maxPacket: maxPacket})
		type msg struct {
			p        []byte
			cap, gen int64
		}
		var written []msg
		now := int64(0)
		steps := rapid.IntRange(1, 200).Draw(rt, "steps")
		for i := range steps {
			now += int64(rapid.IntRange(0, 50).Draw(rt, "dt"))
			op := rapid.IntRange(0, 4).Draw(rt, "op") // append, reserve+commit, batch commit, abort, abandon
			switch op {
			case 0, 1:
				n := rapid.IntRange(0, size/2).Draw(rt, "n")
				p := payload(i, n)
				var ok bool
				if op == 0 {
					ok = r.append(now, int64(i), p)
				} else if dst, rok := r.reserve(now, int64(i), uint64(n)); rok {
					copy(dst, p)
					ok = r.commit()
				}
				if ok {
					written = append(written, msg{p, max(now, r.lastCap), int64(i)})
				}
			default:
				k := rapid.IntRange(1, 40).Draw(rt, "k")
				ps := make([][]byte, k)
				for j := range ps {
					ps[j] = payload(i*64+j, rapid.IntRange(0, size/3).Draw(rt, "len"))
				}
				src, msgs := batchOf(ps, int64(i)*100)
				got := r.stageBatch(now, src, msgs)
				if got > k {
					rt.Fatalf("staged %d of %d", got, k)
				}
				if got == 0 && uint64(len(ps[0])) <= r.maxLen {
					rt.Fatalf("first message of %d bytes (max %d) not staged", len(ps[0]), r.maxLen)
				}
				if got < k && uint64(len(ps[got])) <= r.maxLen && got > 0 {
					// stopped short: the next one would overwrite the run's first entry
					sz := uint64(0)
					for _, p := range ps[:got+1] {
						sz += entrySize(uint64(len(p)))
					}
					if sz <= uint64(size)/2 {
						rt.Fatalf("run of %d bytes stopped at %d of %d in a %d-byte ring", sz, got, k, size)
					}
				}
				// Invisible before the commit.
				c := &cursor{r: r}
				c.seekOldest()
				if held := drain(c); len(held) > len(written) {
					rt.Fatalf("staged entries visible before the commit: %d held, %d committed", len(held), len(written))
				}
				switch op {
				case 2:
					if n := r.commitBatch(); n != got {
						rt.Fatalf("commitBatch = %d, staged %d", n, got)
					}
					for j := range got {
						written = append(written, msg{ps[j], max(now, r.lastCap), msgs[j].GenNs})
					}
				case 3:
					r.abortBatch()
					if r.commitBatch() != 0 {
						rt.Fatal("commit after abort published something")
					}
				}
			}
			if !r.st.active {
				if err := checkRingInvariants(r); err != nil {
					rt.Fatalf("after step %d (op %d): %v", i, op, err)
				}
			}
			c := &cursor{r: r}
			c.seekOldest()
			var got []Message
			for {
				var m Message
				if !c.readInto(&m, math.MaxInt64) {
					break
				}
				got = append(got, m)
			}
			first := len(written) - len(got)
			for k, m := range got {
				w := written[first+k]
				if m.Seq != uint64(first+k) || !bytes.Equal(m.Data, w.p) || m.GenNs != w.gen {
					rt.Fatalf("entry %d: seq %d, want %d (gen %d, want %d)", k, m.Seq, first+k, m.GenNs, w.gen)
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

// TestBatchInvisibleToConcurrentReaders: one writer stages runs of
// messages of varied sizes (now and then a third of the ring, so runs wrap,
// evict everything committed and stop short) and commits, aborts or
// abandons them, the aborted ones marked, while readers of different
// speeds read concurrently. Every message a reader returns verifies, is a
// committed one, in order, and delivered + lost equals the committed count
// for every reader.
func TestBatchInvisibleToConcurrentReaders(t *testing.T) {
	total := uint64(300_000)
	if testing.Short() || raceEnabled {
		total = 40_000
	}
	const size = 64 << 10
	r := newTestRing(t, size, ringConfig{})
	stop := startStressReaders(t, r, 3, 16, verifyStressPayload)
	src := make([]byte, 1<<20)
	msgs := make([]ingest.BatchMessage, 0, 64)
	committed := uint64(0)
	x := uint64(777)
	rnd := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	for sent := uint64(0); sent < total; {
		k := 1 + int(rnd()%64)
		op := rnd() % 4 // 0, 1: commit; 2: abort; 3: abandon
		msgs, off := msgs[:0], uint32(0)
		for j := range k {
			n := 16 + rnd()%512
			if rnd()%32 == 0 {
				n = 16 + rnd()%(size/3)
			}
			stressPayload(src[off:off+uint32(n)], committed+uint64(j), op >= 2)
			msgs = append(msgs, ingest.BatchMessage{Off: off, Len: uint32(n)})
			off += uint32(n)
		}
		got := r.stageBatch(int64(sent), src, msgs)
		if got == 0 {
			t.Fatalf("a run of %d refused", k)
		}
		switch op {
		case 0, 1:
			if r.commitBatch() != got {
				t.Fatal("commitBatch disagrees with stageBatch")
			}
			committed += uint64(got)
		case 2:
			r.abortBatch()
		}
		sent += uint64(got)
	}
	r.abortBatch()
	for k, res := range stop() {
		if res.delivered+res.lost != committed {
			t.Errorf("reader %d: delivered %d + lost %d != committed %d", k, res.delivered, res.lost, committed)
		}
		t.Logf("reader %d: delivered %d, lost %d of %d committed (%d staged)", k, res.delivered, res.lost, committed, total)
	}
	if w := r.counters().Written; w != committed {
		t.Errorf("ring counts %d written, committed %d", w, committed)
	}
}

// TestRecorderBatch: the public API. A staged run is invisible until
// CommitBatch, stamped with the run's capture time (never before the
// topic's newest) and each message's producer time; an aborted or
// abandoned run never appears and takes no sequence numbers; a topic that
// takes no run (unknown, offline, multi-producer, busy with BusySkipData,
// a first message over its max packet) stages nothing and counts nothing.
func TestRecorderBatch(t *testing.T) {
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
	src, msgs := batchOf([][]byte{[]byte("one"), []byte("two"), []byte("three")}, 7)
	if n := r.StageBatch(id, 50, src, msgs); n != 3 {
		t.Fatalf("StageBatch = %d, want 3", n)
	}
	if rd.ReadInto(&m) {
		t.Fatal("a staged message is visible before CommitBatch")
	}
	if n := r.CommitBatch(id); n != 3 {
		t.Fatalf("CommitBatch = %d, want 3", n)
	}
	for i, want := range []string{"one", "two", "three"} {
		if !rd.ReadInto(&m) || string(m.Data) != want || m.Seq != uint64(i) || m.CaptureNs != 50 || m.GenNs != int64(7+i) {
			t.Fatalf("message %d: %q seq %d cap %d gen %d", i, m.Data, m.Seq, m.CaptureNs, m.GenNs)
		}
	}
	// Aborted, then abandoned (dropped by the next IngestAt).
	r.StageBatch(id, 60, src, msgs)
	r.AbortBatch(id)
	if r.CommitBatch(id) != 0 {
		t.Fatal("CommitBatch after AbortBatch published something")
	}
	r.StageBatch(id, 61, src, msgs)
	if !r.IngestAt(id, 40, 1, []byte("next")) {
		t.Fatal("IngestAt after an abandoned run refused")
	}
	if r.CommitBatch(id) != 0 {
		t.Fatal("CommitBatch of a run IngestAt dropped published something")
	}
	if !rd.ReadInto(&m) || m.Seq != 3 || string(m.Data) != "next" || m.CaptureNs != 61 || rd.ReadInto(&m) {
		t.Fatalf("after abort: seq %d %q cap %d, want seq 3 \"next\" (capture time raised to the abandoned run's 61: times never go back) and nothing more", m.Seq, m.Data, m.CaptureNs)
	}
	if c := r.Topics()[id].Counters; c.Written != 4 || c.Bytes != 15 {
		t.Fatalf("counters %+v: want 4 written, 15 bytes", c)
	}
	// Topics that take no run: nothing staged, nothing counted.
	small, _ := r.Discover(ingest.TopicInfo{Name: "small"})
	bigSrc, big := batchOf([][]byte{make([]byte, 101), []byte("x")}, 0)
	if n := r.StageBatch(small, 70, bigSrc, big); n != 0 {
		t.Fatalf("a run starting over the max packet staged %d", n)
	}
	if n := r.StageBatch(small, 70, bigSrc, big[1:]); n != 1 || r.CommitBatch(small) != 1 {
		t.Fatal("a run under the max packet refused")
	}
	mixed, mixedMsgs := batchOf([][]byte{[]byte("y"), make([]byte, 101), []byte("z")}, 0)
	if n := r.StageBatch(small, 71, mixed, mixedMsgs); n != 1 || r.CommitBatch(small) != 1 {
		t.Fatal("a run with a message over the max packet second did not stop before it")
	}
	if c := r.Topics()[small].Counters; c.RejectedOversize != 0 || c.Written != 2 {
		t.Fatalf("counters %+v: want nothing rejected (the source hands it to IngestAt), 2 written", c)
	}
	if r.StageBatch(99, 72, src, msgs) != 0 || r.CommitBatch(99) != 0 {
		t.Fatal("a run for an unknown id staged")
	}
	mp, _ := r.Discover(ingest.TopicInfo{Name: "mp", MultiProducer: true})
	if r.StageBatch(mp, 73, src, msgs) != 0 || r.CommitBatch(mp) != 0 {
		t.Fatal("a run for a multi-producer topic staged")
	}
	r.busySkip = true
	r.SetBusy(true)
	if r.StageBatch(id, 74, src, msgs) != 0 {
		t.Fatal("a run staged while a dump is written with BusySkipData")
	}
	r.SetBusy(false)
	r.busySkip = false
	r.Offline(id)
	if r.StageBatch(id, 75, src, msgs) != 0 {
		t.Fatal("a run for an offline topic staged")
	}
	if c := r.Topics()[id].Counters; c.RejectedOffline != 0 || c.SkippedBusy != 0 || c.Written != 4 {
		t.Fatalf("counters %+v: runs refused must count nothing", c)
	}
}

// checkRingInvariants walks the committed entries from wTail to wHead and
// checks sequence numbers, cumulative bytes and every checkpoint that
// eviction could use.
func checkRingInvariants(r *ring) error {
	starts := map[uint64]entryHeader{}
	pos, seq, cum := r.wTail, r.tailSeq, r.tailCum
	if pos < r.wHead {
		phys := pos & r.mask
		if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
			phys = 0
		}
		if h, _ := r.readHeader(phys); h.capNs != r.tailCap {
			return fmt.Errorf("tailCap %d, the oldest entry's capture time %d", r.tailCap, h.capNs)
		}
	}
	for pos < r.wHead {
		phys := pos & r.mask
		if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
			pos += r.size - phys
			continue
		}
		h, ok := r.readHeader(phys)
		if !ok || h.seq != seq || h.cum != cum+h.n {
			return fmt.Errorf("entry at %d: %+v ok %v, want seq %d cum %d", pos, h, ok, seq, cum)
		}
		starts[pos] = h
		seq++
		cum += h.n
		pos += entrySize(h.n)
	}
	if pos != r.wHead || seq != r.nextSeq || cum != r.cumLen {
		return fmt.Errorf("walk ends at %d seq %d cum %d, head %d nextSeq %d cumLen %d", pos, seq, cum, r.wHead, r.nextSeq, r.cumLen)
	}
	for g := r.wTail >> r.segShift; g<<r.segShift < r.wHead; g++ {
		cp := r.cps[g&r.segMask]
		if cp.pos>>r.segShift != g || cp.pos < r.wTail || cp.pos >= r.wHead {
			continue
		}
		h, ok := starts[cp.pos]
		if !ok || h.seq != cp.seq || h.cum != cp.cum+h.n {
			return fmt.Errorf("checkpoint of segment %d at %d (seq %d) is not an entry start (tail %d head %d)", g, cp.pos, cp.seq, r.wTail, r.wHead)
		}
	}
	return nil
}
