package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"

	"golang.org/x/sys/unix"
)

// dumpBytes is the payload volume of one benchmarked dump.
const dumpBytes = 64 << 20

// newDumpRecorder makes a started recorder on the system clock with a "big"
// topic holding dumpBytes of 64 KiB messages and a "hot" topic for latency
// probes.
func newDumpRecorder(tb testing.TB, nw ...dump.NewWriterFunc) (*engine.Recorder, *dump.Dumper, ingest.TopicID, ingest.TopicID) {
	tb.Helper()
	var w dump.NewWriterFunc
	if len(nw) > 0 {
		w = nw[0]
	}
	return newDumpRecorderExt(tb, w, "")
}

// newDumpRecorderExt is newDumpRecorder with the dump files' extension
// (dump.Config.Extension: ".mcap" with an MCAP writer).
func newDumpRecorderExt(tb testing.TB, w dump.NewWriterFunc, ext string) (*engine.Recorder, *dump.Dumper, ingest.TopicID, ingest.TopicID) {
	tb.Helper()
	r, err := engine.New(engine.Config{
		CacheSize:  2 * dumpBytes,
		TopicBytes: dumpBytes,
		Pre:        new(time.Hour), Post: new(time.Millisecond), Guard: new(time.Duration(0)),
		Topics: []engine.TopicOverride{{Match: "hot", MaxBytes: 4 << 20}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	d, err := dump.New(r, dump.Config{Dir: tb.TempDir(), MaxFiles: 1, Policy: dump.PolicySeparate, NewWriter: w, Extension: ext})
	if err != nil {
		r.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Stop(); r.Close() })
	if err := d.Start(); err != nil {
		tb.Fatal(err)
	}
	big, _ := r.Discover(ingest.TopicInfo{Name: "big"})
	hot, _ := r.Discover(ingest.TopicInfo{Name: "hot"})
	p := makePayload(64 << 10)
	for range dumpBytes/len(p) - 32 { // fill the ring (minus headers and slack)
		r.Ingest(big, 0, p)
	}
	return r, d, big, hot
}

func dumpOnce(tb testing.TB, r *dump.Dumper, topics ...string) dump.Result {
	id, err := r.Trigger(dump.TriggerParams{Reason: "bench", Topics: topics})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := r.Wait(context.Background(), id)
	if err != nil || res.Err != nil {
		tb.Fatalf("dump: %v %v", err, res.Err)
	}
	return res
}

// BenchmarkDumpWrite: writing one ~64 MiB uncompressed dump (.tmp, fsync,
// rename, dir fsync) with each pack writer: mmap, stream (over a
// preallocated file) and write (the default: write(2) with early
// writeback). Compare with BenchmarkRawWrite.
func BenchmarkDumpWrite(b *testing.B) {
	for _, w := range []struct {
		name string
		nw   dump.NewWriterFunc
	}{{"mmap", dump.NewPackMmapWriter}, {"stream", dump.NewPackStreamWriter}, {"write", dump.NewPackWriteWriter}} {
		b.Run("writer="+w.name, func(b *testing.B) {
			_, d, _, _ := newDumpRecorder(b, w.nw)
			res := dumpOnce(b, d, "big")
			b.SetBytes(res.Bytes)
			b.ReportAllocs()
			for b.Loop() {
				dumpOnce(b, d, "big")
			}
		})
	}
}

// BenchmarkRawWrite is the same run's durable-write baseline for the same
// number of bytes: fallocate + write in 1 MiB chunks + fsync.
func BenchmarkRawWrite(b *testing.B) {
	r, d, _, _ := newDumpRecorder(b)
	size := dumpOnce(b, d, "big").Bytes
	d.Stop()
	r.Close()
	dir := b.TempDir()
	chunk := makePayload(1 << 20)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		path := filepath.Join(dir, "raw")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			b.Fatal(err)
		}
		for left := size; left > 0; left -= int64(len(chunk)) {
			if _, err := f.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		os.Remove(path)
	}
}

// BenchmarkIngestLatency measures single 256-byte IngestAt calls on the "hot"
// topic, idle and while a 64 MiB dump is being written, and reports the
// p50 / p99 / p99.9 latency in ns (timer overhead included in both).
// With LATENCY_WRITER=stream|mmap the dump uses that writer instead of the
// default (to compare what each costs the ingest path).
func BenchmarkIngestLatency(b *testing.B) {
	nw := map[string]dump.NewWriterFunc{"stream": dump.NewPackStreamWriter, "mmap": dump.NewPackMmapWriter}[os.Getenv("LATENCY_WRITER")]
	for _, dumping := range []bool{false, true} {
		name := "dump=idle"
		if dumping {
			name = "dump=writing"
		}
		b.Run(name, func(b *testing.B) {
			r, d, _, hot := newDumpRecorder(b, nw)
			p := makePayload(256)
			lat := make([]int64, 0, 1<<20)
			b.ReportAllocs()
			for b.Loop() {
				var id dump.TriggerID
				if dumping {
					var err error
					if id, err = d.Trigger(dump.TriggerParams{Reason: "lat", Topics: []string{"big"}}); err != nil {
						b.Fatal(err)
					}
					for !d.IsDumping() {
					}
				}
				for i := 0; i < 1<<16 && (!dumping || d.IsDumping()); i++ {
					t0 := time.Now()
					r.IngestAt(hot, t0.UnixNano(), 0, p) // the timer's clock read is the capture time, as a source's batch read
					lat = append(lat, int64(time.Since(t0)))
				}
				if dumping {
					d.Wait(context.Background(), id)
				}
			}
			slices.Sort(lat)
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) }
			b.ReportMetric(q(0.5), "p50-ns")
			b.ReportMetric(q(0.99), "p99-ns")
			b.ReportMetric(q(0.999), "p99.9-ns")
			b.ReportMetric(float64(len(lat)), "samples")
		})
	}
}
