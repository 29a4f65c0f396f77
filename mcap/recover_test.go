package mcap

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// recoverFile writes msgs with chunks of chunkSize in comp to memory.
func recoverFile(t testing.TB, comp string, chunkSize int, msgs []sent) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, Options{Compression: comp, ChunkSize: chunkSize, Profile: "x-edr"})
	if err != nil {
		t.Fatal(err)
	}
	writeTest(t, w, msgs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readBack reads a recovered file strictly: it must open, scan with every
// CRC checked, have a summary that agrees with the scan, and its messages
// are returned in file order.
func readBack(t *testing.T, b []byte) []sent {
	t.Helper()
	r, err := NewReader(b, "recovered.mcap", ReaderOptions{})
	if err != nil {
		t.Fatalf("recovered file: %v", err)
	}
	defer r.Close()
	scan, err := r.Scan()
	if err != nil {
		t.Fatalf("recovered file: scan: %v", err)
	}
	sum, ok, err := r.summaryInfo()
	if err != nil || !ok || sum.Messages != scan.Messages || sum.Chunks != scan.Chunks {
		t.Fatalf("recovered file's summary (%v, %v) says %d messages in %d chunks, the data %d in %d",
			ok, err, sum.Messages, sum.Chunks, scan.Messages, scan.Chunks)
	}
	var out []sent
	err = r.Messages(func(c *Channel, m *Message) error {
		mm := *m
		mm.Data = bytes.Clone(m.Data)
		out = append(out, sent{c.Topic, mm})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// messageEnds returns, for each message of the file in file order, the
// offset where the bytes that carry it end: its record's end in an
// uncompressed chunk or outside chunks, its chunk's end in a compressed one.
func messageEnds(t *testing.T, b []byte) []int64 {
	t.Helper()
	r, err := NewReader(b, "", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	it := recIter{b: b[r.dataStart:r.footerAt], base: r.dataStart}
	for {
		rec, ok, _ := it.next()
		if !ok || rec.op == OpDataEnd {
			return ends
		}
		chunkEnd := rec.at + recordPrefixLen + int64(len(rec.body))
		switch rec.op {
		case OpMessage:
			ends = append(ends, chunkEnd)
		case OpChunk:
			d := dec{b: rec.body}
			d.take(chunkFixedLen)
			comp := compressionName(d.bytes32())
			d.u64()
			payloadAt := chunkEnd - int64(len(d.b))
			recs, _, _, err := r.chunkRecords(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			in := recIter{b: recs}
			for {
				m, ok, _ := in.next()
				if !ok {
					break
				}
				if m.op == OpMessage {
					if comp == CompressionNone {
						ends = append(ends, payloadAt+m.at+recordPrefixLen+int64(len(m.body)))
					} else {
						ends = append(ends, chunkEnd)
					}
				}
			}
		}
	}
}

func sameMessage(a, b sent) bool {
	return a.topic == b.topic && a.m.Sequence == b.m.Sequence && a.m.LogTime == b.m.LogTime &&
		a.m.PublishTime == b.m.PublishTime && bytes.Equal(a.m.Data, b.m.Data)
}

// TestRecoverCut cuts files (each compression, small chunks) at 200
// random offsets each: Recover always makes a file the reader reads with
// every CRC and a summary that agrees, holding, in order, every message
// whose bytes end before the cut (uncompressed: its record; compressed:
// its chunk) and, from a compressed chunk cut short, only messages of the
// original, in order.
func TestRecoverCut(t *testing.T) {
	msgs := testMessages(600)
	rng := rand.New(rand.NewPCG(21, 2))
	for _, comp := range []string{CompressionNone, CompressionLZ4, CompressionZstd} {
		t.Run("compression="+comp, func(t *testing.T) {
			full := recoverFile(t, comp, 32<<10, msgs)
			ends := messageEnds(t, full)
			if len(ends) != len(msgs) {
				t.Fatalf("%d message ends for %d messages", len(ends), len(msgs))
			}
			for range 200 {
				cut := magicLen + rng.Int64N(int64(len(full))-magicLen+1)
				var out bytes.Buffer
				rep, err := Recover("cut.mcap", full[:cut], &out, RecoverOptions{})
				if err != nil {
					t.Fatalf("cut at %d: %v", cut, err)
				}
				got := readBack(t, out.Bytes())
				want := 0
				for want < len(ends) && ends[want] <= cut {
					want++
				}
				if len(got) < want || len(got) > len(msgs) {
					t.Fatalf("cut at %d of %d: %d messages recovered, %d end before the cut (report %+v)", cut, len(full), len(got), want, rep)
				}
				if comp == CompressionNone && len(got) != want {
					t.Fatalf("cut at %d: %d messages recovered, want exactly %d", cut, len(got), want)
				}
				for i := range got {
					if !sameMessage(got[i], msgs[i]) {
						t.Fatalf("cut at %d: message %d differs", cut, i)
					}
				}
				if uint64(len(got)) != rep.Messages || cut < int64(len(full)) && !rep.Truncated {
					t.Fatalf("cut at %d: report %+v for %d messages", cut, rep, len(got))
				}
			}
		})
	}
}

// TestRecoverIntact: an intact file comes back with every message,
// nothing lost, not truncated, its compression kept.
func TestRecoverIntact(t *testing.T) {
	msgs := testMessages(300)
	full := recoverFile(t, CompressionZstd, 16<<10, msgs)
	var out bytes.Buffer
	rep, err := Recover("ok.mcap", full, &out, RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, out.Bytes())
	if len(got) != len(msgs) || len(rep.Lost) != 0 || rep.Truncated || !rep.SummaryUsed || rep.Channels != len(testTopics) {
		t.Fatalf("report %+v, %d messages", rep, len(got))
	}
	r, _ := NewReader(out.Bytes(), "", ReaderOptions{})
	info, _ := r.Info()
	if info.Compression[CompressionZstd] == 0 || len(info.Compression) != 1 || info.Profile != "x-edr" {
		t.Errorf("compression %v, profile %q", info.Compression, info.Profile)
	}
}

// chunkAt returns the offsets and lengths of the file's chunk records.
func chunkSpans(t *testing.T, b []byte) (at []int64, size []int64) {
	r, err := NewReader(b, "", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	it := recIter{b: b[r.dataStart:r.footerAt], base: r.dataStart}
	for {
		rec, ok, _ := it.next()
		if !ok {
			return at, size
		}
		if rec.op == OpChunk {
			at = append(at, rec.at)
			size = append(size, recordPrefixLen+int64(len(rec.body)))
		}
	}
}

// TestRecoverDamage: a byte flipped inside a chunk loses that chunk only,
// counted; garbage over record boundaries is skipped up to the next intact
// chunk; channels defined in a lost chunk come from the summary.
func TestRecoverDamage(t *testing.T) {
	msgs := testMessages(600)
	for _, comp := range []string{CompressionNone, CompressionZstd} {
		full := recoverFile(t, comp, 32<<10, msgs)
		at, size := chunkSpans(t, full)
		if len(at) < 4 {
			t.Fatalf("%d chunks", len(at))
		}
		ends := messageEnds(t, full)
		inChunk := func(i int) (n int) { // messages carried by chunk i
			for _, e := range ends {
				if e > at[i] && e <= at[i]+size[i] {
					n++
				}
			}
			return n
		}
		t.Run(comp+"/flip", func(t *testing.T) {
			b := bytes.Clone(full)
			b[at[0]+size[0]-10] ^= 0x55 // the first chunk: it also defines the channels
			var out bytes.Buffer
			rep, err := Recover("bad.mcap", b, &out, RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := readBack(t, out.Bytes())
			lost := inChunk(0)
			if len(got) != len(msgs)-lost || rep.LostChunks != 1 || len(rep.Lost) != 1 || rep.Lost[0].Offset != at[0] ||
				rep.Lost[0].Messages != int64(lost) || rep.LostMessages != uint64(lost) || !rep.SummaryUsed || rep.Orphans != 0 {
				t.Fatalf("report %+v; %d messages, %d lost in the chunk", rep, len(got), lost)
			}
			for i := range got {
				if !sameMessage(got[i], msgs[lost+i]) {
					t.Fatalf("message %d differs", i)
				}
			}
		})
		t.Run(comp+"/garbage", func(t *testing.T) {
			b := bytes.Clone(full)
			from := at[1] + size[1]/2
			for i := from; i < at[2]+20; i++ {
				b[i] = 0xFF
			}
			var out bytes.Buffer
			rep, err := Recover("bad.mcap", b, &out, RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := readBack(t, out.Bytes())
			want := len(msgs) - inChunk(1) - inChunk(2)
			// chunk 1 fails its check; from its end, garbage up to chunk 3
			if len(got) != want || rep.LostChunks != 1 || len(rep.Lost) != 2 || rep.Lost[0].Offset != at[1] || rep.Lost[1].Offset != at[1]+size[1] ||
				rep.Lost[1].Offset+rep.Lost[1].Length != at[3] || !strings.Contains(rep.Lost[1].Reason, "opcode 0xff") {
				t.Fatalf("report %+v; %d messages, want %d", rep, len(got), want)
			}
		})
	}
}

func TestRecoverNotMCAP(t *testing.T) {
	var out bytes.Buffer
	if _, err := Recover("x", []byte("hello, not an MCAP file at all"), &out, RecoverOptions{}); err == nil {
		t.Error("no error for a file with no MCAP in it")
	}
	if _, err := Recover("x", nil, &out, RecoverOptions{Compression: "gzip"}); err == nil {
		t.Error("no error for an unknown compression")
	}
	// magic damaged: the chunks are still found
	msgs := testMessages(100)
	b := recoverFile(t, CompressionLZ4, 8<<10, msgs)
	b[1] = 'X'
	out.Reset()
	rep, err := Recover("x", b, &out, RecoverOptions{Compression: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, out.Bytes()); len(got) == 0 || len(rep.Lost) == 0 || rep.Lost[0].Offset != 0 {
		t.Errorf("bad magic: %d messages, report %+v", len(got), rep)
	}
}
