package pack

import (
	"hash/crc32"
	"os"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// BenchmarkReadFloor measures, in the same rounds as a copy of 64 MiB,
// what any reader of the read gates' files must do at least, so that the
// gates' goals can be set against a floor: read(2) of the uncompressed
// file from the page cache (the one copy a reader of data makes), CRC32C
// of its 64 MiB (pack checks every frame), and the codecs' decompression
// of the same payloads in the files' 16 KiB frames (pack's own codecs,
// the settings pack writes with). It reports each as a fraction of the
// copy's speed and the best ratio a reader could reach doing only that:
//
//	data-floor/copy = copy / (read + crc)
//	lz4-floor/copy  = copy / (lz4 decompress + crc)
//	zstd-floor/copy = copy / (zstd decompress + crc)
//
//	go test -run '^$' -bench ReadFloor -benchtime 9x ./pack/
func BenchmarkReadFloor(b *testing.B) {
	rb := newReadBench(b)
	f, err := os.Open(rb.paths[CompressNone])
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	readAll := func() {
		if _, err := f.Seek(0, 0); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := f.Read(buf)
			if n == 0 || err != nil {
				return
			}
		}
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	const block = 16 << 10
	c := newCodecs()
	blocks := map[Compression][][]byte{}
	for _, codec := range []Compression{CompressLZ4, CompressZstd} {
		for off := 0; off < len(rb.raw); off += block {
			out, err := c.compress(codec, nil, rb.raw[off:off+block])
			if err != nil {
				b.Fatal(err)
			}
			blocks[codec] = append(blocks[codec], append([]byte(nil), out...))
		}
	}
	dst := make([]byte, block)
	decompress := func(codec Compression) {
		for _, blk := range blocks[codec] {
			if _, msg := c.decompress(codec, dst, blk, block); msg != "" {
				b.Fatal(msg)
			}
		}
	}
	timeIt := func(fn func()) float64 {
		t0 := time.Now()
		fn()
		return float64(time.Since(t0))
	}
	var sum uint32
	var read, crc, lz, zs, data, lzFloor, zsFloor []float64
	for b.Loop() {
		tc := timeIt(func() { copy(rb.dst, rb.raw) })
		tr := timeIt(readAll)
		tcrc := timeIt(func() { sum += crc32.Checksum(rb.raw, table) })
		tl := timeIt(func() { decompress(CompressLZ4) })
		tz := timeIt(func() { decompress(CompressZstd) })
		read, crc = append(read, tc/tr), append(crc, tc/tcrc)
		lz, zs = append(lz, tc/tl), append(zs, tc/tz)
		data = append(data, tc/(tr+tcrc))
		lzFloor, zsFloor = append(lzFloor, tc/(tl+tcrc)), append(zsFloor, tc/(tz+tcrc))
	}
	_ = sum
	b.ReportMetric(testutil.Median(read), "read/copy")
	b.ReportMetric(testutil.Median(crc), "crc32c/copy")
	b.ReportMetric(testutil.Median(lz), "lz4-decompress/copy")
	b.ReportMetric(testutil.Median(zs), "zstd-decompress/copy")
	b.ReportMetric(testutil.Median(data), "data-floor/copy")
	b.ReportMetric(testutil.Median(lzFloor), "lz4-floor/copy")
	b.ReportMetric(testutil.Median(zsFloor), "zstd-floor/copy")
}
