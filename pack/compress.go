package pack

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// codecs holds reusable compressors and decompressors. Not safe for
// concurrent use; each Writer and Reader has its own.
type codecs struct {
	lz    lz4.Compressor
	zenc  *zstd.Encoder
	zsmal *zstd.Encoder // single-segment, for data up to zstd.MinWindowSize
	zdec  *zstd.Decoder
}

func newCodecs() *codecs { return &codecs{} }

// compress appends the compressed form of src to dst.
func (c *codecs) compress(codec Compression, dst, src []byte) ([]byte, error) {
	switch codec {
	case CompressLZ4:
		need := lz4.CompressBlockBound(len(src))
		if cap(dst) < need {
			dst = make([]byte, 0, need)
		}
		n, err := c.lz.CompressBlock(src, dst[:need])
		if err != nil {
			return dst[:0], fmt.Errorf("pack: lz4: %w", err)
		}
		if n == 0 { // incompressible
			return dst[:0], nil
		}
		return dst[:n], nil
	case CompressZstd:
		// FORMAT.md wants the frame's content size. The encoder leaves it
		// out of a frame under 256 bytes that is not single-segment, and
		// picks single-segment itself only above MinWindowSize: small data
		// goes through an encoder that always sets it.
		enc := &c.zenc
		if len(src) <= zstd.MinWindowSize {
			enc = &c.zsmal
		}
		if *enc == nil {
			var err error
			*enc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true),
				zstd.WithSingleSegment(enc == &c.zsmal))
			if err != nil {
				return dst, fmt.Errorf("pack: zstd: %w", err)
			}
		}
		return (*enc).EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: %d", ErrUnsupportedCodec, codec)
}

// decompress decodes src into dst[:rawLen] (dst must have that capacity) and
// returns a static reason on failure.
func (c *codecs) decompress(codec Compression, dst, src []byte, rawLen int) ([]byte, string) {
	switch codec {
	case CompressLZ4:
		n, err := lz4.UncompressBlock(src, dst[:rawLen])
		if err != nil || n != rawLen {
			return nil, "lz4 data does not decode to the stated length"
		}
		return dst[:rawLen], ""
	case CompressZstd:
		if c.zdec == nil {
			var err error
			c.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(MaxFrameSize), zstd.WithDecoderLowmem(true),
				zstd.WithDecodeAllCapLimit(true))
			if err != nil {
				return nil, "zstd decoder unavailable"
			}
		}
		var hdr zstd.Header
		// A frame without its content size (writers before the fix in
		// compress wrote frames under 256 bytes so) is bounded by its
		// blocks below and by the length check after decoding.
		if err := hdr.Decode(src); err != nil || hdr.Skippable || (hdr.HasFCS && hdr.FrameContentSize != uint64(rawLen)) {
			return nil, "zstd frame content size differs from the stated length"
		}
		if reason := zstdBlocksBound(src, hdr.HeaderSize, hdr.HasCheckSum, rawLen); reason != "" {
			return nil, reason
		}
		out, err := c.zdec.DecodeAll(src, dst[:0:rawLen])
		if err != nil || len(out) != rawLen {
			return nil, "zstd data does not decode to the stated length"
		}
		return out, ""
	}
	return nil, "unknown compression codec"
}

// zstdMaxBlock is the most a zstd block can decode to (Block_Maximum_Size,
// RFC 8878 §3.1.1.2.3).
const zstdMaxBlock = 128 << 10

// zstdBlocksBound walks the block headers of the single zstd frame in src
// (its header is hdrSize bytes) without decoding anything and checks that
// the blocks tile src exactly and can produce rawLen bytes at most: raw and
// RLE blocks decode to their stated size, a compressed block to at most
// zstdMaxBlock. So decompression never writes into more memory than the
// stored bytes can really produce (the worst case, RLE blocks, is
// zstdMaxBlock per 4 stored bytes).
func zstdBlocksBound(src []byte, hdrSize int, checksum bool, rawLen int) string {
	p, most := hdrSize, 0
	for {
		if p+3 > len(src) {
			return "zstd block header runs past the stored data"
		}
		bh := int(src[p]) | int(src[p+1])<<8 | int(src[p+2])<<16
		p += 3
		last, typ, size := bh&1 == 1, (bh>>1)&3, bh>>3
		switch typ {
		case 0: // raw
			p += size
			most += size
		case 1: // RLE
			p++
			most += size
		case 2: // compressed
			if size > zstdMaxBlock {
				return "zstd block larger than the format allows"
			}
			p += size
			most += zstdMaxBlock
		default:
			return "reserved zstd block type"
		}
		if p > len(src) {
			return "zstd block runs past the stored data"
		}
		if last {
			break
		}
	}
	if checksum {
		p += 4
	}
	if p != len(src) {
		return "zstd frame does not end where the stored data ends"
	}
	if rawLen > most {
		return "zstd blocks cannot produce the stated length"
	}
	return ""
}

func (c *codecs) close() {
	if c.zdec != nil {
		c.zdec.Close()
	}
	if c.zenc != nil {
		_ = c.zenc.Close()
	}
}
