package mcap

import (
	"bytes"
	"fmt"
	"io"

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
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			return nil, fmt.Errorf("mcap: zstd encoder: %w", err)
		}
		return zstdCompressor{enc}, nil
	}
	return nil, fmt.Errorf("%w: unsupported compression %q (want \"\", %q or %q)",
		ErrCompression, name, CompressionLZ4, CompressionZstd)
}

// appendWriter is an io.Writer appending to a slice it owns.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// lz4Compressor writes the LZ4 frame format (the one the MCAP
// specification names "lz4"), reusing one frame writer.
type lz4Compressor struct {
	zw  *lz4.Writer
	out appendWriter
}

func newLZ4Compressor(chunkSize int) *lz4Compressor {
	c := &lz4Compressor{}
	c.zw = lz4.NewWriter(&c.out)
	bs := lz4.Block4Mb
	switch {
	case chunkSize <= 64<<10:
		bs = lz4.Block64Kb
	case chunkSize <= 256<<10:
		bs = lz4.Block256Kb
	case chunkSize <= 1<<20:
		bs = lz4.Block1Mb
	}
	if err := c.zw.Apply(lz4.BlockSizeOption(bs), lz4.ConcurrencyOption(1),
		lz4.CompressionLevelOption(lz4.Fast)); err != nil {
		panic("BUG: lz4 options rejected: " + err.Error())
	}
	return c
}

func (c *lz4Compressor) compress(dst, src []byte) ([]byte, error) {
	c.out.b = dst
	c.zw.Reset(&c.out)
	if _, err := c.zw.Write(src); err != nil {
		return dst, fmt.Errorf("mcap: lz4: %w", err)
	}
	if err := c.zw.Close(); err != nil {
		return dst, fmt.Errorf("mcap: lz4: %w", err)
	}
	out := c.out.b
	c.out.b = nil
	return out, nil
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
		if uint64(cap(dst)) < size {
			dst = make([]byte, size)
		}
		dst = dst[:size]
		if _, err := io.ReadFull(d.lz, dst); err != nil {
			return dst[:0], fmt.Errorf("%w: lz4: %v", ErrCompression, err)
		}
		var one [1]byte
		if n, _ := d.lz.Read(one[:]); n != 0 {
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
		if uint64(cap(dst)) < size {
			dst = make([]byte, 0, size)
		}
		out, err := d.zd.DecodeAll(src, dst[:0])
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

func (d *decompressor) close() {
	if d.zd != nil {
		d.zd.Close()
	}
}
