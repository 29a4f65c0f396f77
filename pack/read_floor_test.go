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
//	meta-floor/copy = copy / (meta walk)
//
// The meta walk is the least a meta-only reader does with each frame of
// the mapped file: the frame header's fields, the head CRC32C (header,
// meta and block table), and one pass over the meta's protobuf reading
// every field's tag and varint or length, storing nothing (the decoder
// also keeps name, times and data index of each message, checks them and
// bounds the frame's memory first).
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
	r, err := Open(rb.paths[CompressNone])
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var frames []int64 // the frames' offsets in the mapping
	var fr Frame
	for r.ReadMetaInto(&fr) == nil {
		frames = append(frames, r.last)
	}
	var walked int
	metaWalk := func() {
		for _, off := range frames {
			var h frameHeader
			if _, err := parseFrameHeader(r.data[off:], &h); err != nil {
				b.Fatal(err)
			}
			rec := r.data[off : off+h.recLen]
			if headCRCOf(rec, &h) != h.headCRC {
				b.Fatal("head CRC")
			}
			n := walkFields(rec[FrameHeaderSize:h.tableOff], 2)
			if n < 0 {
				b.Fatalf("frame at %d: the meta walk does not parse", off)
			}
			walked += n
		}
	}
	timeIt := func(fn func()) float64 {
		t0 := time.Now()
		fn()
		return float64(time.Since(t0))
	}
	var sum uint32
	var read, crc, lz, zs, data, lzFloor, zsFloor, meta []float64
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
		meta = append(meta, tc/timeIt(metaWalk))
	}
	if walked == 0 {
		b.Fatal("the meta walk found no fields")
	}
	_ = sum
	b.ReportMetric(testutil.Median(read), "read/copy")
	b.ReportMetric(testutil.Median(crc), "crc32c/copy")
	b.ReportMetric(testutil.Median(lz), "lz4-decompress/copy")
	b.ReportMetric(testutil.Median(zs), "zstd-decompress/copy")
	b.ReportMetric(testutil.Median(data), "data-floor/copy")
	b.ReportMetric(testutil.Median(lzFloor), "lz4-floor/copy")
	b.ReportMetric(testutil.Median(zsFloor), "zstd-floor/copy")
	b.ReportMetric(testutil.Median(meta), "meta-floor/copy")
}

// walkFields reads every field of the protobuf message b — one-byte
// tags, varints and lengths read inline, as pack's meta decoder does —
// and, depth levels down, the fields of its length-delimited ones; it
// stores nothing and returns the number of fields (-1 when b does not
// parse).
func walkFields(b []byte, depth int) int {
	n := 0
	for len(b) > 0 {
		tag := b[0]
		v, k := uvarint(b[1:])
		if tag >= 0x80 || k < 0 {
			return -1
		}
		b = b[1+k:]
		n++
		switch tag & 7 {
		case 0:
		case 2:
			if v > uint64(len(b)) {
				return -1
			}
			if depth > 1 && tag>>3 == fieldFrameDataList {
				k := walkFields(b[:v], depth-1)
				if k < 0 {
					return -1
				}
				n += k
			}
			b = b[v:]
		default:
			return -1
		}
	}
	return n
}
