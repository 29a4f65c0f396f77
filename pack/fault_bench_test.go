package pack

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// guardOnly is what the fault guard adds to a call: SetPanicOnFault on
// and back, a deferred call with recover.
//
//go:noinline
func guardOnly(b []byte) (err error) {
	defer guard(&err, "x", b, debug.SetPanicOnFault(true))
	return nil
}

// preadAll reads every frame of the file at path without a mapping:
// each record with one pread (its length from the index) into a reused
// buffer, decoded there as a Reader decodes the mapping (both CRCs,
// meta, blocks).
func preadAll(tb testing.TB, path string, offs []int64, end int64, withData bool, buf *[]byte, f *Frame, d *frameDecoder) int {
	fd, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fd.Close()
	n := 0
	for i, off := range offs {
		next := end
		if i+1 < len(offs) {
			next = offs[i+1]
		}
		rec := int(next - off)
		if cap(*buf) < rec {
			*buf = make([]byte, rec)
		}
		b := (*buf)[:rec]
		if _, err := fd.ReadAt(b, off); err != nil && err != io.EOF {
			tb.Fatal(err)
		}
		if _, err := d.decodeFrame(b, off, f, withData); err != nil {
			tb.Fatal(err)
		}
		n += f.Len()
	}
	return n
}

// BenchmarkShrinkGuard measures the two ways a reader can survive a file
// that shrinks under it (issue #31, item 3; docs/performance.md, "pack: a
// file that shrinks"): the mapped Reader with every call guarded by
// debug.SetPanicOnFault (what it does), against reading each frame with
// pread into a buffer and decoding it there (no mapping, so no fault: a
// short read is the error), in the same rounds (median of per-round
// ratios, mapped time / pread time: below 1 the mapping is the faster),
// over a 64 MiB file of 16 KiB frames (16 messages of 1 KiB) and a file
// of 200 000 frames of one 16-byte message, with and without the data.
// guard-ns is the guard alone per call.
//
//	go test -run '^$' -bench ShrinkGuard -benchtime 9x ./pack/
func BenchmarkShrinkGuard(b *testing.B) {
	dir := b.TempDir()
	big := filepath.Join(dir, "big.pack")
	writeFile(b, big, benchFrames((64<<20)/(16*1024), 16, 1024, sensorData(8<<20, 3)), WriterOptions{})
	tiny := filepath.Join(dir, "tiny.pack")
	var tf []*Frame
	for i := range 200_000 {
		f := NewFrame(uint64(i), int64(i)*1000)
		f.AddMetaWithData("t", "", nil, int64(i)*1000, 0, []byte("0123456789abcdef"))
		tf = append(tf, f)
	}
	writeFile(b, tiny, tf, WriterOptions{})
	for _, file := range []struct{ name, path string }{{"16KiB-frames", big}, {"tiny-frames", tiny}} {
		for _, withData := range []bool{true, false} {
			b.Run(fmt.Sprintf("file=%s/data=%v", file.name, withData), func(b *testing.B) {
				r, err := Open(file.path)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				offs := r.FrameOffsets()
				var f, g Frame
				var buf []byte
				d := frameDecoder{path: file.path, codec: newCodecs()}
				defer d.codec.close()
				mapped := func() {
					r.Rewind()
					for {
						var err error
						if withData {
							err = r.ReadInto(&f)
						} else {
							err = r.ReadMetaInto(&f)
						}
						if err == io.EOF {
							return
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				pread := func() { preadAll(b, file.path, offs, r.end, withData, &buf, &g, &d) }
				mapped()
				pread()
				var ratios, tm, tp []float64
				for b.Loop() {
					ratio, tpread, tmapped := testutil.SameRunRatio(1, pread, mapped)
					ratios = append(ratios, ratio)
					tm = append(tm, float64(tmapped.Nanoseconds())/float64(len(offs)))
					tp = append(tp, float64(tpread.Nanoseconds())/float64(len(offs)))
				}
				b.ReportMetric(testutil.Median(ratios), "mapped/pread")
				b.ReportMetric(testutil.Median(tm), "mapped-ns/frame")
				b.ReportMetric(testutil.Median(tp), "pread-ns/frame")
				b.ReportMetric(float64(len(offs)), "frames")
			})
		}
	}
	b.Run("guard-only", func(b *testing.B) {
		x := []byte{1}
		for b.Loop() {
			if guardOnly(x) != nil {
				b.Fatal("fault")
			}
		}
	})
}
