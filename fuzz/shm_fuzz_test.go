package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

// boundedSink accepts everything and checks that what it is handed could
// have come from the segment file: never more payload than the file has.
type boundedSink struct {
	t         *testing.T
	limit     int
	messages  int
	bytes     int
	discovers int
}

func (s *boundedSink) Discover(ingest.TopicInfo) (ingest.TopicID, error) {
	s.discovers++
	return 3, nil
}
func (s *boundedSink) Now() int64                         { return 1 }
func (s *boundedSink) Offline(ingest.TopicID)             {}
func (s *boundedSink) Lost(ingest.TopicID, int64, uint64) {}
func (s *boundedSink) IngestAt(id ingest.TopicID, _, _ int64, p []byte) bool {
	s.messages++
	s.bytes += len(p)
	if id != 3 || s.bytes > s.limit || s.messages*shm.RecordHeaderSize > s.limit {
		s.t.Fatalf("ingested %d messages / %d bytes (topic %d) from a %d-byte file", s.messages, s.bytes, id, s.limit)
	}
	return true
}

// directSink is boundedSink taking reservations (ingest.DirectSink), so
// records take the consumer's direct path: every reservation is bounded by
// the file, and committed or aborted before the next one.
type directSink struct {
	boundedSink
	buf      []byte
	n        int
	reserved bool
}

func (s *directSink) ReserveAt(id ingest.TopicID, _, _ int64, n int) ([]byte, bool) {
	if s.reserved || id != 3 || n < 0 || n > s.limit {
		s.t.Fatalf("reservation of %d bytes (topic %d, one open: %v) from a %d-byte file", n, id, s.reserved, s.limit)
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	s.reserved, s.n = true, n
	return s.buf[:n], true
}

func (s *directSink) Commit(ingest.TopicID) bool {
	if !s.reserved {
		s.t.Fatal("Commit without a reservation")
	}
	s.reserved = false
	return s.IngestAt(3, 0, 0, s.buf[:s.n]) // counted and bounded as any message
}

func (s *directSink) Abort(ingest.TopicID) {
	if !s.reserved {
		s.t.Fatal("Abort without a reservation")
	}
	s.reserved = false
}

// batchSink is boundedSink taking runs (ingest.BatchSink), so small
// records take the consumer's batch path: every run lies in the mapping
// (bounded by the file), is committed or aborted before the next one, and
// each committed message is counted and bounded as any message.
type batchSink struct {
	boundedSink
	staged [][]byte
	open   bool
	runs   int
}

func (s *batchSink) StageBatch(id ingest.TopicID, _ int64, src []byte, msgs []ingest.BatchMessage) int {
	if s.open || id != 3 || len(src) > s.limit || len(msgs) == 0 {
		s.t.Fatalf("run of %d messages (topic %d, one open: %v) over %d bytes from a %d-byte file", len(msgs), id, s.open, len(src), s.limit)
	}
	s.staged = s.staged[:0]
	for _, m := range msgs {
		if uint64(m.Off)+uint64(m.Len) > uint64(len(src)) {
			s.t.Fatalf("message at %d of %d bytes outside the %d-byte mapping", m.Off, m.Len, len(src))
		}
		s.staged = append(s.staged, append([]byte(nil), src[m.Off:m.Off+m.Len]...))
	}
	s.open = true
	return len(msgs)
}

func (s *batchSink) CommitBatch(ingest.TopicID) int {
	if !s.open {
		s.t.Fatal("CommitBatch without a run")
	}
	s.open = false
	s.runs++
	for _, p := range s.staged {
		s.IngestAt(3, 0, 0, p)
	}
	return len(s.staged)
}

func (s *batchSink) AbortBatch(ingest.TopicID) {
	if !s.open {
		s.t.Fatal("AbortBatch without a run")
	}
	s.open = false
}

// FuzzShmSegment writes arbitrary bytes as a segment file (named for topic
// "fuzz") and consumes it to the end with shm.DrainFile, exactly as the
// consumer reads a hostile producer's segment. Properties: no panic and no
// read outside the file (a fault would crash the fuzzer); work and output
// bounded by the file size; the counters agree with what the sink saw; any
// error is a *shm.SegmentError (or a file error) naming the segment. The
// schema area of a version 2 segment: the declared type's schema is the
// file's bytes at HeaderSize (never more than the file holds, never more
// than MaxSchemaSize), or the topic is raw bytes with a *shm.TypeError.
func FuzzShmSegment(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("EDRSHM\x00\x01"))
	// Segments live in tmpfs: fuzz there too when it exists (much faster
	// than a disk-backed temporary directory).
	dir, err := os.MkdirTemp("/dev/shm", "edr-fuzz-")
	if err != nil {
		dir = f.TempDir()
	} else {
		f.Cleanup(func() { os.RemoveAll(dir) })
	}
	path := filepath.Join(dir, shm.SegmentFileName("fuzz", ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sink := &boundedSink{t: t, limit: len(data)}
		st, err := shm.DrainFile(path, sink, shm.ConsumerOptions{})
		// The same file through the direct path (every message reserved
		// in the sink and copied straight from the mapping) reads the
		// same messages and fails the same way.
		ds := &directSink{boundedSink: boundedSink{t: t, limit: len(data)}}
		dst, derr := shm.DrainFile(path, ds, shm.ConsumerOptions{DirectMin: 1})
		if ds.reserved || fmt.Sprint(derr) != fmt.Sprint(err) || dst.Messages != st.Messages || dst.Bytes != st.Bytes ||
			dst.Lost != st.Lost || dst.Rejected != st.Rejected || ds.messages != sink.messages || ds.bytes != sink.bytes {
			t.Fatalf("direct path: %+v, %v (sink %d messages, %d bytes); chunk path: %+v, %v (sink %d, %d)",
				dst, derr, ds.messages, ds.bytes, st, err, sink.messages, sink.bytes)
		}
		// And through the batch path (runs of small records staged from
		// the mapping, then committed or aborted).
		bs := &batchSink{boundedSink: boundedSink{t: t, limit: len(data)}}
		bst, berr := shm.DrainFile(path, bs, shm.ConsumerOptions{})
		if bs.open || fmt.Sprint(berr) != fmt.Sprint(err) || bst.Messages != st.Messages || bst.Bytes != st.Bytes ||
			bst.Lost != st.Lost || bst.Rejected != st.Rejected || bs.messages != sink.messages || bs.bytes != sink.bytes {
			t.Fatalf("batch path: %+v, %v (sink %d messages, %d bytes); chunk path: %+v, %v (sink %d, %d)",
				bst, berr, bs.messages, bs.bytes, st, err, sink.messages, sink.bytes)
		}
		if uint64(sink.messages) != st.Messages+st.Rejected || uint64(sink.bytes) != st.Bytes {
			t.Fatalf("stats %+v disagree with the sink (%d messages, %d bytes)", st, sink.messages, sink.bytes)
		}
		if err != nil {
			var se *shm.SegmentError
			if errors.As(err, &se) {
				if se.Segment != path || se.Field == "" || se.Offset < 0 || se.Offset > int64(max(len(data), shm.HeaderSize)) {
					t.Fatalf("bad SegmentError %+v", se)
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("error %v (%T) is not a SegmentError", err, err)
			}
			return
		}
		if sink.discovers != 1 {
			t.Fatalf("valid segment discovered %d times", sink.discovers)
		}
		typ := st.Topic.Type
		if st.TypeErr != nil {
			var te *shm.TypeError
			if !errors.As(st.TypeErr, &te) || te.Segment != path || te.Topic != "fuzz" || typ.MessageEncoding != ingest.EncodingRaw || len(typ.Schema.Data) != 0 {
				t.Fatalf("type error %v with type %v", st.TypeErr, typ)
			}
			return
		}
		if n := len(typ.Schema.Data); n > shm.MaxSchemaSize || n > 0 && (shm.HeaderSize+n > len(data) ||
			!bytes.Equal(typ.Schema.Data, data[shm.HeaderSize:shm.HeaderSize+n])) {
			t.Fatalf("schema of %d bytes is not the file's schema area (%d-byte file)", n, len(data))
		}
	})
}

// TestWriteShmSeedCorpus adds typed (version 2) segments to
// testdata/fuzz/FuzzShmSegment when SHM_WRITE_SEEDS=1: a packed layout
// with three messages and a 3 KiB JSON Schema.
func TestWriteShmSeedCorpus(t *testing.T) {
	if os.Getenv("SHM_WRITE_SEEDS") != "1" {
		t.Skip("set SHM_WRITE_SEEDS=1 to add the typed shm seeds")
	}
	dir := t.TempDir()
	var js strings.Builder
	js.WriteString(`{"type":"object","properties":{`)
	for i := 0; js.Len() < 3<<10; i++ {
		fmt.Fprintf(&js, `"f%d":{"type":"number"},`, i)
	}
	js.WriteString(`"last":{"type":"string"}}}`)
	for name, typ := range map[string]ingest.Type{
		"typed_packed": ingest.Packed("v.Speed", "f32le speed (m/s); u8 gear; pad 3"),
		"typed_json": {MessageEncoding: ingest.EncodingJSON,
			Schema: ingest.Schema{Name: "v.Module", Encoding: ingest.SchemaJSON, Data: []byte(js.String())}},
	} {
		p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: "fuzz", Type: typ, Capacity: shm.MinCapacity, NoPrefault: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p.Publish(int64(i), []byte{0, 0, 0x20, 0x41, byte(i), 0, 0, 0})
		}
		b, err := os.ReadFile(p.Path())
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		os.Remove(p.Path())
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join("testdata", "fuzz", "FuzzShmSegment", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
