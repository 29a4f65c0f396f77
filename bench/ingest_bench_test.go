package bench

import (
	"fmt"
	"sync"
	"testing"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// BenchmarkIngest: one topic, one writer, the ingest path as every source
// drives it (ARCHITECTURE.md, "Source → recorder (`ingest.Sink`)"): Recorder.Now read once
// per batch of ingestBatch messages, IngestAt for each.
func BenchmarkIngest(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint("size=", n), func(b *testing.B) {
			r, ids := newIngestRecorder(b, 1, ringBytesFor(n))
			benchIngest(b, r, ids[0], n)
		})
	}
}

// ingestBatch is the batch of the benchmarks: the UDP source's recvmmsg
// batch (capture.DefaultBatch).
const ingestBatch = 64

func benchIngest(b *testing.B, r *engine.Recorder, id ingest.TopicID, n int) {
	p := makePayload(n)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	ok, i := 0, 0
	var now int64
	for b.Loop() {
		if i%ingestBatch == 0 {
			now = r.Now()
		}
		i++
		if r.IngestAt(id, now, 1, p) {
			ok++
		}
	}
	if ok == 0 {
		b.Fatal("every Ingest rejected")
	}
	sink += ok
}

// BenchmarkIngestClockEach: Recorder.Ingest, which reads the real clock
// for every message (the in-process convenience; sources batch). The
// difference to BenchmarkIngest is the cost of one clock read.
func BenchmarkIngestClockEach(b *testing.B) {
	for _, n := range []int{64, 1024} {
		b.Run(fmt.Sprint("size=", n), func(b *testing.B) {
			r, ids := newIngestRecorder(b, 1, ringBytesFor(n))
			benchIngestClockEach(b, r, ids[0], n)
		})
	}
}

func benchIngestClockEach(b *testing.B, r *engine.Recorder, id ingest.TopicID, n int) {
	p := makePayload(n)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	ok := 0
	for b.Loop() {
		if r.Ingest(id, 1, p) {
			ok++
		}
	}
	sink += ok
}

// BenchmarkCopy is the same-run ceiling: a plain copy of the same payloads
// into a wrapping buffer of the same capacity.
func BenchmarkCopy(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint("size=", n), func(b *testing.B) {
			benchCopy(b, newCopyRing(b, ringBytesFor(n)), n)
		})
	}
}

func benchCopy(b *testing.B, c *copyRing, n int) {
	p := makePayload(n)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		c.put(p)
	}
	sink += c.pos
}

// BenchmarkIngestParallel: N writers on N topics at once, 256-byte messages.
// It uses b.N (not b.Loop) because the work is split across goroutines.
func BenchmarkIngestParallel(b *testing.B) {
	for _, topics := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprint("topics=", topics), func(b *testing.B) {
			r, ids := newIngestRecorder(b, topics, engine.DefaultTopicBytes)
			p := makePayload(256)
			b.SetBytes(256)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range topics {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += topics {
						r.Ingest(ids[w], 1, p)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkChannel is what a user would write instead of a ring: copy into
// a buffer from a fixed pool and hand it to a consumer goroutine through a
// buffered channel.
func BenchmarkChannel(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint("size=", n), func(b *testing.B) {
			const depth = 64
			pool := make([][]byte, depth+2)
			for i := range pool {
				pool[i] = make([]byte, n)
			}
			ch := make(chan []byte, depth)
			done := make(chan int)
			go func() {
				s := 0
				for m := range ch {
					s += int(m[0])
				}
				done <- s
			}()
			p := makePayload(n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf := pool[i%len(pool)]
				copy(buf, p)
				ch <- buf
				i++
			}
			close(ch)
			sink += <-done
		})
	}
}
