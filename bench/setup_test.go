package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/arena"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// sizes are the payload sizes every ingest/copy benchmark runs at.
var sizes = []int{64, 256, 1024, 16384, 262144, 1048576}

// ringBytesFor is the capacity of the benchmarked topic ring, and of the copy
// baseline's buffer, for n-byte messages: the recorder's default topic size
// (4 MiB) or 64 messages, whichever is larger (64 MiB for 1 MiB messages).
func ringBytesFor(n int) int {
	return max(engine.DefaultTopicBytes, 64*n)
}

// newIngestRecorder makes a recorder with topics topics, each with a ring of
// ringBytes.
func newIngestRecorder(tb testing.TB, topics, ringBytes int) (*engine.Recorder, []ingest.TopicID) {
	tb.Helper()
	r, err := engine.New(engine.Config{
		CacheSize:  int64(topics * ringBytes),
		TopicBytes: int64(ringBytes),
		Pre:        new(time.Minute), // age eviction never fires during a run
	})
	if err != nil {
		tb.Fatalf("engine.New: %v", err)
	}
	tb.Cleanup(func() { r.Close() })
	ids := make([]ingest.TopicID, topics)
	for i := range ids {
		ids[i], err = r.Discover(ingest.TopicInfo{Name: fmt.Sprint("bench/", i), Source: "api"})
		if err != nil {
			tb.Fatalf("Discover: %v", err)
		}
	}
	return r, ids
}

// copyRing is the baseline: a plain copy into a wrapping buffer of the same
// capacity, in the same kind of memory (an arena block, touched at start).
type copyRing struct {
	buf []byte
	pos int
}

func newCopyRing(tb testing.TB, ringBytes int) *copyRing {
	tb.Helper()
	a, err := arena.New(arena.Options{Size: int64(ringBytes)})
	if err != nil {
		tb.Fatalf("arena.New: %v", err)
	}
	tb.Cleanup(func() { a.Close() })
	blk, err := a.Alloc(ringBytes)
	if err != nil {
		tb.Fatalf("Alloc: %v", err)
	}
	return &copyRing{buf: blk.Bytes()}
}

func (c *copyRing) put(p []byte) {
	if c.pos+len(p) > len(c.buf) {
		c.pos = 0
	}
	copy(c.buf[c.pos:], p)
	c.pos += (len(p) + 7) &^ 7
}

func makePayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i * 31)
	}
	return p
}

// sink keeps benchmark results observable.
var sink int
