package mcap

import (
	"bytes"
	"fmt"
	"io"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressor compresses one chunk's records, appending to dst.
type compressor interface {
	compress(dst, src []byte) ([]byte, error)
}

func newCompressor(name string, chunkSize int) (compressor, error) {
	switch name {
	case CompressionNone:
		return nil, nil
	case CompressionLZ4:
		return newLZ4Compressor(chunkSize), nil
	case CompressionZstd:
		// Each chunk is compressed on its own: a window larger than the
		// chunk buys nothing and costs memory (8 MiB by default).
		window := zstd.MinWindowSize
		for window < chunkSize && window < zstd.MaxWindowSize {
			window <<= 1
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(window), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, fmt.Errorf("mcap: zstd encoder: %w", err)
		}
		return zstdCompressor{enc}, nil
	}
	return nil, fmt.Errorf("%w: unsupported compression %q (want \"\", %q or %q)",
		ErrCompression, name, CompressionLZ4, CompressionZstd)
}

// lz4Compressor writes the LZ4 frame format (the one the MCAP
// specification names "lz4"): magic, frame descriptor with independent
// blocks and no checksums (the chunk's CRC32 covers the data), blocks of at
// most blockSize bytes (stored raw when they do not shrink), end mark. It
// uses the block compressor directly so that it owns every buffer: the
// frame writer of github.com/pierrec/lz4 takes its buffers from sync.Pools,
// which a GC cycle empties, and would allocate on the dump path.
type lz4Compressor struct {
	c         lz4.Compressor
	blockSize int
	bd        byte // frame descriptor BD byte: block max size
}

// LZ4 frame format constants (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md).
const (
	lz4FrameMagic = 0x184D2204
	lz4FLG        = 0x60 // version 01, block independence, no checksums, no content size
	lz4RawBlock   = 1 << 31
)

func newLZ4Compressor(chunkSize int) *lz4Compressor {
	c := &lz4Compressor{blockSize: 4 << 20, bd: 7 << 4}
	switch {
	case chunkSize <= 64<<10:
		c.blockSize, c.bd = 64<<10, 4<<4
	case chunkSize <= 256<<10:
		c.blockSize, c.bd = 256<<10, 5<<4
	case chunkSize <= 1<<20:
		c.blockSize, c.bd = 1<<20, 6<<4
	}
	return c
}

func (c *lz4Compressor) compress(dst, src []byte) ([]byte, error) {
	dst = le.AppendUint32(dst, lz4FrameMagic)
	dst = append(dst, lz4FLG, c.bd, lz4HeaderChecksum(lz4FLG, c.bd))
	for len(src) > 0 {
		n := min(len(src), c.blockSize)
		block := src[:n]
		src = src[n:]
		at := len(dst)
		dst = slices.Grow(dst, 4+lz4.CompressBlockBound(n))
		out := dst[at+4 : at+4+lz4.CompressBlockBound(n)]
		size, err := c.c.CompressBlock(block, out)
		if err != nil {
			return dst[:at], fmt.Errorf("mcap: lz4: %w", err)
		}
		if size == 0 || size >= n {
			dst = le.AppendUint32(dst[:at], uint32(n)|lz4RawBlock)
			dst = append(dst, block...)
			continue
		}
		dst = le.AppendUint32(dst[:at], uint32(size))
		dst = dst[:at+4+size]
	}
	return le.AppendUint32(dst, 0), nil // end mark
}

// lz4HeaderChecksum is the frame descriptor's HC byte: the second byte of
// XXH32 (seed 0) of the FLG and BD bytes.
func lz4HeaderChecksum(flg, bd byte) byte {
	const (
		p1 = 2654435761
		p2 = 2246822519
		p3 = 3266489917
		p5 = 374761393
	)
	h := uint32(p5 + 2) // seed 0 + PRIME32_5 + input length
	for _, b := range [2]byte{flg, bd} {
		h += uint32(b) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return byte(h >> 8)
}

type zstdCompressor struct{ enc *zstd.Encoder }

func (c zstdCompressor) compress(dst, src []byte) ([]byte, error) {
	return c.enc.EncodeAll(src, dst), nil
}

// decompressor inflates chunk records for the reader. It keeps its
// decoders between chunks.
type decompressor struct {
	lz  *lz4.Reader
	src bytes.Reader
	zd  *zstd.Decoder
	max uint64
	one [1]byte // reads past the end (a local would escape: one allocation per chunk)
}

// decompress inflates src (compressed with name) into dst[:0], which must
// come out exactly size bytes long.
func (d *decompressor) decompress(dst []byte, name string, src []byte, size uint64) ([]byte, error) {
	if size > d.max {
		return dst, fmt.Errorf("%w: uncompressed_size %d over limit %d", ErrTooLarge, size, d.max)
	}
	switch name {
	case CompressionLZ4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.src.Reset(src)
		d.lz.Reset(&d.src)
		dst = slices.Grow(dst[:0], int(size))[:size] // amortized: buffers reused for chunks of varying sizes settle
		if _, err := io.ReadFull(d.lz, dst); err != nil {
			return dst[:0], fmt.Errorf("%w: lz4: %v", ErrCompression, err)
		}
		if n, _ := d.lz.Read(d.one[:]); n != 0 {
			return dst[:0], fmt.Errorf("%w: lz4: more than uncompressed_size %d bytes", ErrCompression, size)
		}
		return dst, nil
	case CompressionZstd:
		if d.zd == nil {
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(max(d.max, 1<<20)), zstd.WithDecoderMaxWindow(max(d.max, 1<<20)))
			if err != nil {
				return dst, fmt.Errorf("%w: zstd decoder: %v", ErrCompression, err)
			}
			d.zd = zd
		}
		out, err := d.zd.DecodeAll(src, slices.Grow(dst[:0], int(size)))
		if err != nil {
			return dst[:0], fmt.Errorf("%w: zstd: %v", ErrCompression, err)
		}
		if uint64(len(out)) != size {
			return out[:0], fmt.Errorf("%w: zstd: got %d bytes, uncompressed_size says %d", ErrCompression, len(out), size)
		}
		return out, nil
	}
	return dst, fmt.Errorf("%w: unsupported compression %q", ErrCompression, name)
}

// decompressPrefix inflates as much of src (compressed with name, cut
// short) as it can, at most size bytes, into dst[:0]: what a chunk cut by
// the end of its file still holds. It stops at the first error.
func (d *decompressor) decompressPrefix(dst []byte, name string, src []byte, size uint64) []byte {
	size = min(size, d.max)
	dst = slices.Grow(dst[:0], int(size))[:size]
	var r io.Reader
	switch name {
	case CompressionLZ4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.src.Reset(src)
		d.lz.Reset(&d.src)
		r = d.lz
	case CompressionZstd:
		if d.zd == nil {
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(max(d.max, 1<<20)), zstd.WithDecoderMaxWindow(max(d.max, 1<<20)))
			if err != nil {
				return dst[:0]
			}
			d.zd = zd
		}
		d.src.Reset(src)
		if err := d.zd.Reset(&d.src); err != nil {
			return dst[:0]
		}
		r = d.zd
	default:
		return dst[:0]
	}
	n, _ := io.ReadFull(r, dst)
	return dst[:n]
}

func (d *decompressor) close() {
	if d.zd != nil {
		d.zd.Close()
	}
}
