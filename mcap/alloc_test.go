//go:build !race

package mcap

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestWriteMessageAllocs: once the writer's buffers have grown, writing a
// message allocates nothing, including the chunk flushes (compression,
// MessageIndex records) it triggers every few hundred messages.
func TestWriteMessageAllocs(t *testing.T) {
	for _, comp := range compressions {
		t.Run(fmt.Sprintf("compression=%q", comp), func(t *testing.T) {
			w, err := NewWriter(io.Discard, Options{Compression: comp, ChunkSize: 16 << 10})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := w.AddTopic(Topic{Name: "a"})
			b, _ := w.AddTopic(Topic{Name: "b", Type: ingest.Raw("T")})
			data := make([]byte, 200)
			m := Message{Data: data}
			i := 0
			write := func() {
				i++
				m.ChannelID = []uint16{a, b}[i%2]
				m.LogTime = uint64(i)
				data[i%len(data)] = byte(i)
				if err := w.WriteMessage(&m); err != nil {
					t.Fatal(err)
				}
			}
			for range 5000 { // grow every buffer, flush many chunks
				write()
			}
			// The summary's chunk index grows by one entry per chunk; give it
			// room for the measured run, as a long-running writer amortizes.
			w.chunks = slices.Grow(w.chunks, 1000)
			w.miChan = slices.Grow(w.miChan, 2000)
			w.miOff = slices.Grow(w.miOff, 2000)
			// testing.AllocsPerRun rounds the average down, which would hide
			// one allocation per chunk flush: count every malloc instead.
			// A GC cycle before each run empties sync.Pools, so buffers
			// taken from a pool would show up: they must be the writer's own.
			var n uint64
			for range 5 {
				runtime.GC()
				n += testutil.Mallocs(1000, write)
			}
			if n != 0 {
				t.Errorf("WriteMessage: %d allocations in 5000 messages (%d chunks), want 0", n, len(w.chunks))
			}
		})
	}
}

// TestCursorAllocs: once a Cursor has read a file (its per-chunk state and
// decompression buffers grown), reading it again, in time order, from a
// time or in file order, allocates nothing: per chunk nor per message.
// Files in order and shuffled (every chunk overlapping every other, out of
// order within).
func TestCursorAllocs(t *testing.T) {
	base := testMessages(3000)
	shuffled := slices.Clone(base)
	for i := range shuffled {
		shuffled[i].m.LogTime = uint64((i * 7919) % 1000)
	}
	for name, in := range map[string][]sent{"sorted": base, "shuffled": shuffled} {
		for _, comp := range compressions {
			t.Run(fmt.Sprintf("%s/compression=%q", name, comp), func(t *testing.T) {
				r, err := NewReader(encode(t, Options{Compression: comp, ChunkSize: 16 << 10}, in), "a.mcap", ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				c, err := r.Cursor()
				if err != nil {
					t.Fatal(err)
				}
				var n int
				pass := func() {
					for _, start := range []func(){func() { c.SeekTime(0) }, func() { c.SeekTime(in[len(in)/2].m.LogTime) }, c.FileOrder} {
						start()
						for {
							ok, err := c.Next()
							if err != nil {
								t.Fatal(err)
							}
							if !ok {
								break
							}
							n += len(c.Message().Data)
						}
					}
				}
				pass()
				runtime.GC()
				// zstd's decoder rebuilds a Huffman table now and then
				// (its own allocation, after a GC emptied its pools); ours
				// would show once per chunk: about 1800 here.
				var allowed uint64
				if comp == CompressionZstd {
					allowed = 10
				}
				if a := testutil.Mallocs(3, pass); a > allowed {
					t.Errorf("%d allocations in 3 passes over %d messages in %d chunks, want at most %d", a, len(in), r.mustChunks(t), allowed)
				}
			})
		}
	}
}

func (r *Reader) mustChunks(t *testing.T) int {
	info, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return info.Chunks
}

// TestSealedChunkLentAllocs: a signed dump's chunks lent to the seal's
// worker (WriteChunkLent, KeepChunk: hashed while the next chunk is built)
// allocate nothing once the writer's two chunk buffers have grown.
func TestSealedChunkLentAllocs(t *testing.T) {
	s, _ := testSigner(t)
	opt := FileOptions{InPlace: true}
	opt.ChunkSize = 64 << 10
	opt.Seal = evidence.NewSealer(s, evidence.FormatMCAP, evidence.Link{})
	opt.Seal.Async(func() {})
	pw, err := CreatePackWriter(filepath.Join(t.TempDir(), "lent.mcap"), opt)
	if err != nil {
		t.Fatal(err)
	}
	w := pw.Writer()
	var bufs [2][]byte
	var lenders [2]tornLender
	for i := range bufs {
		bufs[i] = make([]byte, 80<<10)
	}
	small := []byte("copied into the chunk")
	i := 0
	step := func() {
		i++
		ts := int64(1e9 + i*1000)
		if err := pw.Add("small", "c", nil, ts, ts, small); err != nil {
			t.Fatal(err)
		}
		if err := pw.AddBorrowed("big", "", ts, ts, bufs[i%2]); err != nil {
			t.Fatal(err)
		}
		l := &lenders[i%2]
		*l = tornLender{}
		if err := w.WriteChunkLent(l); err != nil {
			t.Fatal(err)
		}
		w.KeepChunk()
	}
	for range 500 { // grow both chunk buffers, the worker's state and the per-chunk indexes (amortized)
		step()
	}
	// The summary's chunk and message indexes grow by one entry per
	// chunk; give them room, as a long-running writer amortizes.
	w.chunks = slices.Grow(w.chunks, 1000)
	w.miChan = slices.Grow(w.miChan, 2000)
	w.miOff = slices.Grow(w.miOff, 2000)
	// The small writes copied aside while the worker hashes a chunk grow
	// their buffer when more arrive than ever before (timing: bounded by
	// evidence's sideMax); steady state is a run with no growth left, so
	// the best of three runs must allocate nothing.
	n := uint64(1 << 62)
	for range 3 {
		runtime.GC()
		n = min(n, testutil.Mallocs(200, step))
	}
	if n != 0 {
		t.Errorf("sealed WriteChunkLent: %d allocations in 200 chunks, want 0", n)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
}
