package media

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var sinkBytes int

// benchFile writes an H.264 MP4 of n samples of about size bytes each (a
// key frame every 30) and returns its path and contents.
func benchFile(b *testing.B, n, size int) (string, []byte) {
	rng := rand.New(rand.NewPCG(8, 8))
	payload := slice(rng, CodecH264, 1, 1<<20+size)
	samples := make([]Sample, n)
	for i := range samples {
		typ := 1
		if i%30 == 0 {
			typ = 5
		}
		off := rng.IntN(1 << 20)
		nal := append([]byte{byte(0x60 | typ)}, payload[off+1:off+size]...)
		if typ == 5 {
			samples[i].Data = annexB(testSPS264, testPPS264, nal)
		} else {
			samples[i].Data = annexB(nal)
		}
		samples[i].PTSNs = testStart + int64(i)*33_333_333
		samples[i].DTSNs = samples[i].PTSNs
		samples[i].Key = typ == 5
	}
	path := filepath.Join(b.TempDir(), "bench.mp4")
	w, err := CreateMP4(path, CodecH264, MP4WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range samples {
		if err := w.Write(&samples[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, data
}

// BenchmarkMP4Next measures the import of an MP4 from the page cache
// against two baselines over the same samples, interleaved: each op is one
// round of three passes over the file, timed apart: Next over every
// sample (4-byte lengths rewritten to start codes in place, parameter
// sets before key frames; samples under 16 KiB through the read-ahead
// window, larger ones read directly), pread of each sample into a buffer,
// and a plain copy of each sample from memory. It reports each pass in
// GB/s of sample bytes and the median over rounds of the per-round ratios
// mp4/copy and mp4/pread (on a busy machine the rounds move together,
// the ratios less). allocs/op is per round: 0 means none per sample.
func BenchmarkMP4Next(b *testing.B) {
	for _, c := range []struct{ n, size int }{{16384, 4 << 10}, {2048, 64 << 10}, {128, 1 << 20}} {
		path, data := benchFile(b, c.n, c.size)
		m, err := OpenMP4(path, MP4Options{})
		if err != nil {
			b.Fatal(err)
		}
		// The samples' places, for the baselines.
		type span struct{ off, n int64 }
		var spans []span
		var total int64
		for {
			var loc sampleLoc
			ok, err := m.stbl.next(m, &loc)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			spans = append(spans, span{loc.off, int64(loc.size)})
			total += int64(loc.size)
		}
		m.Rewind()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var s Sample
		for m.Next(&s) == nil { // warm up: s.Data grows to the largest sample
		}
		buf := make([]byte, c.size+4096)
		b.Run(fmt.Sprintf("size=%dKiB", c.size>>10), func(b *testing.B) {
			tm, tp, tc := make([]float64, 0, 1<<12), make([]float64, 0, 1<<12), make([]float64, 0, 1<<12) // seconds per pass
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				m.Rewind()
				for {
					err := m.Next(&s)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					sinkBytes += len(s.Data)
				}
				t1 := time.Now()
				for _, sp := range spans {
					n, err := f.ReadAt(buf[:sp.n], sp.off)
					if err != nil {
						b.Fatal(err)
					}
					sinkBytes += n
				}
				t2 := time.Now()
				for _, sp := range spans {
					sinkBytes += copy(buf, data[sp.off:sp.off+sp.n])
				}
				t3 := time.Now()
				tm = append(tm, t1.Sub(t0).Seconds())
				tp = append(tp, t2.Sub(t1).Seconds())
				tc = append(tc, t3.Sub(t2).Seconds())
			}
			gbs := func(t []float64) float64 { return float64(total) / 1e9 / median(t) }
			ratio := func(base []float64) float64 {
				r := make([]float64, len(tm))
				for i := range tm {
					r[i] = base[i] / tm[i]
				}
				return median(r)
			}
			b.ReportMetric(gbs(tm), "mp4-GB/s")
			b.ReportMetric(gbs(tp), "pread-GB/s")
			b.ReportMetric(gbs(tc), "copy-GB/s")
			b.ReportMetric(ratio(tc), "mp4/copy")
			b.ReportMetric(ratio(tp), "mp4/pread")
		})
		f.Close()
		m.Close()
	}
	if sinkBytes == 0 {
		b.Fatal("nothing read")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
