package fuzz

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// FuzzShmSegment writes arbitrary bytes as a segment file (named for topic
// "fuzz") and consumes it to the end with shm.DrainFile, exactly as the
// consumer reads a hostile producer's segment. Properties: no panic and no
// read outside the file (a fault would crash the fuzzer); work and output
// bounded by the file size; the counters agree with what the sink saw; any
// error is a *shm.SegmentError (or a file error) naming the segment.
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
	})
}
