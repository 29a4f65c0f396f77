//go:build !race

package mcap

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
)

// totalMallocs runs f n times and returns the number of heap allocations,
// not rounded (GOMAXPROCS 1 keeps other goroutines from adding theirs).
func totalMallocs(n int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range n {
		f()
	}
	runtime.ReadMemStats(&b)
	return b.Mallocs - a.Mallocs
}

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
			b, _ := w.AddTopic(Topic{Name: "b", Type: "T"})
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
				n += totalMallocs(1000, write)
			}
			if n != 0 {
				t.Errorf("WriteMessage: %d allocations in 5000 messages (%d chunks), want 0", n, len(w.chunks))
			}
		})
	}
}
