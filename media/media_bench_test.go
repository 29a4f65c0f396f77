package media

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
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
	data := writeMP4(b, CodecH264, MP4WriterOptions{}, samples)
	path := filepath.Join(b.TempDir(), "bench.mp4")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path, data
}

// BenchmarkMP4Next measures the import of an MP4 from the page cache, one
// sample per op (4-byte lengths rewritten to start codes in place,
// parameter sets before key frames), against two same-run baselines over
// the same samples: pread of each sample into a buffer ("pread"), and a
// plain copy of each sample from memory ("copy"). MB/s counts sample
// bytes. Samples of the 4 KiB file come through the read-ahead window,
// larger ones are read directly.
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
		sm, _ := OpenMP4(path, MP4Options{})
		for i := 0; ; i++ {
			var loc sampleLoc
			ok, err := sm.stbl.next(sm, &loc)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			spans = append(spans, span{loc.off, int64(loc.size)})
			total += int64(loc.size)
		}
		sm.Close()
		per := total / int64(len(spans))
		name := fmt.Sprintf("size=%dKiB", c.size>>10)
		b.Run(name+"/mp4", func(b *testing.B) {
			var s Sample
			for m.Next(&s) == nil { // warm up: s.Data grows to the largest sample
			}
			m.Rewind()
			b.SetBytes(per)
			b.ReportAllocs()
			for b.Loop() {
				err := m.Next(&s)
				if err == io.EOF {
					m.Rewind()
					err = m.Next(&s)
				}
				if err != nil {
					b.Fatal(err)
				}
				sinkBytes += len(s.Data)
			}
		})
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/pread", func(b *testing.B) {
			buf := make([]byte, c.size+4096)
			b.SetBytes(per)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sp := spans[i%len(spans)]
				n, err := f.ReadAt(buf[:sp.n], sp.off)
				if err != nil {
					b.Fatal(err)
				}
				sinkBytes += n
				i++
			}
		})
		b.Run(name+"/copy", func(b *testing.B) {
			buf := make([]byte, c.size+4096)
			b.SetBytes(per)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sp := spans[i%len(spans)]
				sinkBytes += copy(buf, data[sp.off:sp.off+sp.n])
				i++
			}
		})
		f.Close()
		m.Close()
	}
	if sinkBytes == 0 {
		b.Fatal("nothing read")
	}
}
