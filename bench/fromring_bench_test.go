package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// BenchmarkFromRingSizes: what taking payloads from the rings is worth per
// payload size, the measurement behind dump.FromRingMin and
// dump.MCAPFromRingMin. For each size a recorder holds a ~64 MiB window of
// messages of that size; each round (one op) writes it with the pack
// writer borrowing every payload and copying every payload, and with the
// MCAP writer the same, in an order rotating by round. It reports the
// median of the per-round time ratios copying / borrowing (above 1:
// borrowing is faster). The dumps go to $EDR_DUMP_BENCH_DIR when set
// (/dev/shm takes the disk out and leaves the CPU cost), else to a
// temporary directory.
//
//	EDR_DUMP_BENCH_DIR=/dev/shm go test -run '^$' -bench FromRingSizes -benchtime 20x ./bench/
func BenchmarkFromRingSizes(b *testing.B) {
	variants := []struct {
		name string
		nw   dump.NewWriterFunc
		ext  string
	}{
		{"pack-borrow", dump.NewPackWriteWriterTuned(dump.PackWriteTuning{FromRingMin: 1}), ".pack"},
		{"pack-copy", dump.NewPackWriteWriterTuned(dump.PackWriteTuning{Copying: true}), ".pack"},
		{"mcap-borrow", dump.NewMCAPWriterTuned(dump.MCAPWriteTuning{FromRingMin: 1}), ".mcap"},
		{"mcap-copy", dump.NewMCAPWriterTuned(dump.MCAPWriteTuning{Copying: true}), ".mcap"},
	}
	for _, size := range []int{64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			r, err := engine.New(engine.Config{CacheSize: 2 * dumpBytes, TopicBytes: dumpBytes,
				Pre: new(time.Hour), Post: new(time.Millisecond), Guard: new(time.Duration(0))})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			dir := os.Getenv("EDR_DUMP_BENCH_DIR")
			if dir == "" {
				dir = b.TempDir()
			} else if dir, err = os.MkdirTemp(dir, "fromring"); err != nil {
				b.Fatal(err)
			} else {
				defer os.RemoveAll(dir)
			}
			ds := make([]*dump.Dumper, len(variants))
			for i, v := range variants {
				d, err := dump.New(r, dump.Config{Dir: fmt.Sprintf("%s/%d", dir, i), MaxFiles: 1,
					Policy: dump.PolicySeparate, NewWriter: v.nw, Extension: v.ext})
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Start(); err != nil {
					b.Fatal(err)
				}
				defer d.Stop()
				ds[i] = d
			}
			big, _ := r.Discover(ingest.TopicInfo{Name: "big"})
			p := makePayload(size)
			for range dumpBytes/(size+64) - 64 { // fill the ring (headers and slack aside)
				r.Ingest(big, 0, p)
			}
			for _, d := range ds {
				dumpOnce(b, d, "big") // warm up
			}
			var pack, mcap []float64
			round := 0
			for b.Loop() {
				t := make([]time.Duration, len(ds))
				for k := range ds {
					i := (k + round) % len(ds)
					t0 := time.Now()
					dumpOnce(b, ds[i], "big")
					t[i] = time.Since(t0)
				}
				pack = append(pack, t[1].Seconds()/t[0].Seconds())
				mcap = append(mcap, t[3].Seconds()/t[2].Seconds())
				round++
			}
			b.ReportMetric(median(pack), "pack-copy/borrow")
			b.ReportMetric(median(mcap), "mcap-copy/borrow")
		})
	}
}
