//go:build !ecu

package dumpfile

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/media"
)

// testMP4 writes an H.264 MP4 of n samples of about size bytes each (a
// key frame every 30, random payload) to dir and returns its path and
// the sizes of its samples as the demuxer gives them (Annex B).
func testMP4(tb testing.TB, dir string, n, size int) (string, []int) {
	tb.Helper()
	sps, _ := hex.DecodeString("6764000aacd9447b0110000003001000000303c0f1225960")
	pps, _ := hex.DecodeString("68ebe3cb22c0")
	rng := rand.New(rand.NewPCG(23, 23))
	payload := make([]byte, 1<<20+size)
	for i := range payload {
		payload[i] = byte(rng.IntN(255) + 1) // no zero bytes: no start code inside
	}
	path := filepath.Join(dir, fmt.Sprintf("bench-%d.mp4", size))
	w, err := media.CreateMP4(path, media.CodecH264, media.MP4WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		off := rng.IntN(1 << 20)
		typ := byte(1)
		if i%30 == 0 {
			typ = 5
		}
		nal := append([]byte{0x60 | typ}, payload[off+1:off+size]...)
		parts := [][]byte{{}, nal}
		if typ == 5 {
			parts = [][]byte{{}, sps, pps, nal}
		}
		s := media.Sample{PTSNs: 1e18 + int64(i)*33_333_333, DTSNs: 1e18 + int64(i)*33_333_333, Key: typ == 5,
			Data: bytes.Join(parts, []byte{0, 0, 0, 1})}
		if err := w.Write(&s); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	m, err := media.OpenMP4(path, media.MP4Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	var sizes []int
	var s media.Sample
	for {
		if err := m.Next(&s); err == io.EOF {
			break
		} else if err != nil {
			tb.Fatal(err)
		}
		sizes = append(sizes, len(s.Data))
	}
	return path, sizes
}

var sinkN int

// BenchmarkMP4Import measures reading an MP4 from the page cache into the
// timeline against a plain copy of the same bytes, interleaved: each op is
// one round of three passes, timed apart: "source" reads every sample as a
// foxglove.CompressedVideo message through a Messages merge (what merge,
// replay and import read: demux, Annex B, protobuf encoding), "import"
// rewrites the file to a pack dump in the temporary directory (edr-lite
// import --format mp4: written as NAME.tmp, fsynced, renamed; removed
// after the round), "stream" the same rewrite to a pack stream into
// io.Discard (the encoding without the file system), and "copy" copies each
// sample's bytes from memory. GB/s are sample bytes (Annex B) per second,
// medians over rounds; the ratios are medians of the per-round ratios.
// allocs/op is per round.
func BenchmarkMP4Import(b *testing.B) {
	dir := b.TempDir()
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		n := (64 << 20) / size
		path, sizes := testMP4(b, dir, n, size)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		var total int64
		for _, s := range sizes {
			total += int64(s)
		}
		src, err := OpenMedia(path, FormatMP4, MediaOptions{})
		if err != nil {
			b.Fatal(err)
		}
		msgs := NewMessages(src)
		buf := make([]byte, slices.Max(sizes))
		out := filepath.Join(dir, "out.pack")
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			var ts, ti, tw, tc []float64
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if err := msgs.SeekTime(0); err != nil {
					b.Fatal(err)
				}
				for {
					ok, err := msgs.Next()
					if err != nil {
						b.Fatal(err)
					}
					if !ok {
						break
					}
					sinkN += len(msgs.Message().Data)
				}
				t1 := time.Now()
				if _, err := Rewrite([]*Source{src}, Output{Path: out}, RewriteOptions{}); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if _, err := Rewrite([]*Source{src}, Output{W: io.Discard}, RewriteOptions{}); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				off := 0
				for _, s := range sizes {
					sinkN += copy(buf, data[off:off+s])
					off = (off + s) % (len(data) - len(buf))
				}
				t4 := time.Now()
				os.Remove(out)
				ts, ti, tc = append(ts, t1.Sub(t0).Seconds()), append(ti, t2.Sub(t1).Seconds()), append(tc, t4.Sub(t3).Seconds())
				tw = append(tw, t3.Sub(t2).Seconds())
			}
			gbs := func(t []float64) float64 { return float64(total) / 1e9 / median(t) }
			ratio := func(a, base []float64) float64 {
				r := make([]float64, len(a))
				for i := range a {
					r[i] = base[i] / a[i]
				}
				return median(r)
			}
			b.ReportMetric(gbs(ts), "source-GB/s")
			b.ReportMetric(gbs(ti), "import-GB/s")
			b.ReportMetric(gbs(tw), "stream-GB/s")
			b.ReportMetric(gbs(tc), "copy-GB/s")
			b.ReportMetric(ratio(tw, tc), "stream/copy")
			b.ReportMetric(ratio(ts, tc), "source/copy")
			b.ReportMetric(ratio(ti, tc), "import/copy")
		})
		src.Close()
	}
	if sinkN == 0 {
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
