// What a reader may allocate from what a file declares: decompressed chunk
// sizes are bounded by what the stored bytes can produce (the codecs'
// largest compression ratio) and by ReaderOptions.MaxChunkSize; chunks
// overlapping in time are held together only up to the same limit.

package mcap

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/edr-lite/edr-lite/pack"
)

// Largest compression ratios: what n stored bytes can decompress to at
// most. An LZ4 sequence adds at most 255 bytes of match per byte of input
// (length extension bytes), plus a short match per sequence; a zstd RLE
// block turns 4 bytes (3 of header, 1 of data) into up to 128 KiB, the
// most any zstd block decodes to.
const (
	lz4MaxRatio  = 256
	zstdMaxRatio = 32768 // = 128 KiB / 4 bytes, pack.MaxCompressionRatio
	ratioSlack   = 1 << 10
)

// maxDecompressed is the most stored bytes of compression name can
// produce (0 for a compression this package does not read).
func maxDecompressed(name string, stored int) uint64 {
	switch name {
	case CompressionLZ4:
		return uint64(stored)*lz4MaxRatio + ratioSlack
	case CompressionZstd:
		return uint64(stored)*zstdMaxRatio + ratioSlack
	}
	return 0
}

// checkDecompressed refuses an uncompressed size that the stored bytes
// cannot produce or that is over the limit, before anything is allocated.
func checkDecompressed(name string, stored int, size, limit uint64) error {
	if size > limit {
		return fmt.Errorf("%w: uncompressed_size %d over the reader's limit of %d MiB (offline tools: --max-memory)", ErrTooLarge, size, limit>>20)
	}
	if most := maxDecompressed(name, stored); most != 0 && size > most {
		return fmt.Errorf("%w: uncompressed_size %d, but %d bytes of %s decompress to at most %d", ErrCorrupt, size, stored, name, most)
	}
	return nil
}

// defaultMaxChunkSize: see DefaultMaxChunkSize.
const defaultMaxChunkSize = pack.DefaultMaxMemory

// chunkCost is the memory a Cursor holds while reading segment s in time
// order: a compressed chunk's uncompressed size (uncompressed chunks and
// runs of messages are read in place).
func (c *Cursor) chunkCost(s *segment) uint64 {
	if s.chunkAt < 0 {
		return 0
	}
	it := recIter{b: c.r.b[s.chunkAt:], base: s.chunkAt}
	rec, ok, _ := it.next()
	if !ok || rec.op != OpChunk {
		return 0
	}
	d := dec{b: rec.body}
	d.u64()
	d.u64()
	usize := d.u64()
	d.u32()
	if comp := d.bytes32(); d.bad || len(comp) == 0 {
		return 0
	}
	return usize
}

// overlap returns the most decompressed bytes of chunks whose time ranges
// overlap at one instant (what reading in time order holds at once) and
// the offset of a chunk that is part of that peak.
func (c *Cursor) overlap() (peak uint64, at int64) {
	type event struct {
		t     uint64
		start bool
		cost  uint64
		at    int64
	}
	ev := make([]event, 0, 2*len(c.segs))
	for i := range c.segs {
		s := &c.segs[i]
		if cost := c.chunkCost(s); cost > 0 {
			ev = append(ev, event{s.min, true, cost, s.chunkAt}, event{s.max, false, cost, s.chunkAt})
		}
	}
	// Starts before ends at the same time: a segment is released only
	// after its last message, so both are held then.
	slices.SortFunc(ev, func(a, b event) int {
		if r := cmp.Compare(a.t, b.t); r != 0 {
			return r
		}
		switch {
		case a.start && !b.start:
			return -1
		case !a.start && b.start:
			return 1
		}
		return 0
	})
	var cur uint64
	for _, e := range ev {
		if e.start {
			cur += e.cost
			if cur > peak {
				peak, at = cur, e.at
			}
		} else {
			cur -= e.cost
		}
	}
	return peak, at
}
