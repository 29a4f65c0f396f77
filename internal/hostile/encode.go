// Raw encoders of pack and MCAP records, written from pack/FORMAT.md and
// the MCAP specification rather than through the writers, so that a case
// can say anything a hostile file could: lengths that lie, CRCs that match
// lies, records out of place.

package hostile

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

var (
	le         = binary.LittleEndian
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// pack/FORMAT.md sizes and magics.
const (
	packHeaderSize  = 64
	packFrameHeader = 48
	packSectionHead = 16
	packTrailerSize = 32

	codecNone = 0
	codecLZ4  = 1
	codecZstd = 2

	sectionMetadata = 1
	sectionIndex    = 2
)

// packHeader is a valid pack file header.
func packHeader() []byte {
	b := make([]byte, packHeaderSize)
	copy(b, "EDRPACK\x00")
	le.PutUint16(b[8:], 1)
	le.PutUint64(b[16:], 1_764_670_000_000_000_000)
	copy(b[24:60], "edr-lite hostile")
	le.PutUint32(b[60:], crc32c(b[:60]))
	return b
}

// packFrame is one frame record. lens are the block lengths (they should
// sum to raw), stored the stored data section; both CRCs are computed, so
// the frame is as well-formed as its lengths.
type packFrame struct {
	meta    []byte
	lens    []uint32
	stored  []byte
	codec   byte
	raw     uint32
	timeNs  int64
	endNs   int64
	nblocks uint32 // when non-zero, overrides len(lens) in the header
	metaLen uint32 // when non-zero, overrides len(meta) in the header
}

func (f packFrame) bytes() []byte {
	b := make([]byte, packFrameHeader, packFrameHeader+len(f.meta)+4*len(f.lens)+len(f.stored))
	le.PutUint32(b[0:], 0x4d524645) // "EFRM"
	le.PutUint32(b[8:], crc32c(f.stored))
	ml := uint32(len(f.meta))
	if f.metaLen != 0 {
		ml = f.metaLen
	}
	nb := uint32(len(f.lens))
	if f.nblocks != 0 {
		nb = f.nblocks
	}
	le.PutUint32(b[12:], ml)
	le.PutUint32(b[16:], nb)
	le.PutUint32(b[20:], uint32(len(f.stored)))
	le.PutUint32(b[24:], f.raw)
	b[28] = f.codec
	le.PutUint64(b[32:], uint64(f.timeNs))
	le.PutUint64(b[40:], uint64(max(f.endNs, f.timeNs)))
	b = append(b, f.meta...)
	for _, n := range f.lens {
		b = le.AppendUint32(b, n)
	}
	le.PutUint32(b[4:], crc32c(b[8:]))
	return append(b, f.stored...)
}

// packSection is a section record with a correct CRC.
func packSection(kind uint32, payload []byte) []byte {
	b := make([]byte, packSectionHead, packSectionHead+len(payload))
	le.PutUint32(b[0:], 0x43455345) // "ESEC"
	le.PutUint32(b[8:], kind)
	le.PutUint32(b[12:], uint32(len(payload)))
	b = append(b, payload...)
	le.PutUint32(b[4:], crc32c(b[8:]))
	return b
}

// packMetadata is a metadata section payload: uvarint name length, name,
// blob.
func packMetadata(name string, blob []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
	return append(b, blob...)
}

// packTrailer is a trailer naming the index at indexOff in a file of size
// bytes.
func packTrailer(indexOff, size int64) []byte {
	b := make([]byte, packTrailerSize)
	le.PutUint32(b[0:], 0x4c525445) // "ETRL"
	le.PutUint64(b[8:], uint64(indexOff))
	le.PutUint64(b[16:], uint64(size))
	copy(b[24:], "EDRPEND\x00")
	le.PutUint32(b[4:], crc32c(b[8:]))
	return b
}

// withIndex closes a file (header and records) with an index section whose
// payload is idx and a valid trailer.
func withIndex(file, idx []byte) []byte {
	off := int64(len(file))
	file = append(file, packSection(sectionIndex, idx)...)
	return append(file, packTrailer(off, int64(len(file))+packTrailerSize)...)
}

// meta encodings of frame.v2.proto.
func pbTag(b []byte, field, typ int) []byte { return binary.AppendUvarint(b, uint64(field<<3|typ)) }

func pbBytes(b []byte, field int, v []byte) []byte {
	b = pbTag(b, field, 2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func pbVarint(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(pbTag(b, field, 0), v)
}

// pbMessage is one FrameV2Proto.Message with a name, a time and a data
// index (-1: none).
func pbMessage(name string, ts int64, dataIndex int) []byte {
	m := pbBytes(nil, 1, []byte(name))
	m = pbVarint(m, 3, uint64(ts))
	m = pbVarint(m, 4, uint64(ts))
	if dataIndex >= 0 {
		m = pbVarint(m, 6, uint64(dataIndex))
	}
	return m
}

// MCAP records (https://mcap.dev/spec).
const (
	opHeader        = 0x01
	opFooter        = 0x02
	opSchema        = 0x03
	opChannel       = 0x04
	opMessage       = 0x05
	opChunk         = 0x06
	opMessageIndex  = 0x07
	opChunkIndex    = 0x08
	opAttachment    = 0x09
	opStatistics    = 0x0B
	opMetadata      = 0x0C
	opMetadataIndex = 0x0D
	opSummaryOffset = 0x0E
	opDataEnd       = 0x0F
)

var mcapMagic = []byte{0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'}

func mcapRecord(b []byte, op byte, body []byte) []byte {
	b = append(b, op)
	b = le.AppendUint64(b, uint64(len(body)))
	return append(b, body...)
}

func mcapString(b []byte, s string) []byte {
	b = le.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// mcapStart is the leading magic and a Header record.
func mcapStart() []byte {
	b := append([]byte(nil), mcapMagic...)
	h := mcapString(nil, "")
	h = mcapString(h, "edr-lite hostile")
	return mcapRecord(b, opHeader, h)
}

// mcapChannel is a Channel record (no schema, no metadata).
func mcapChannel(id uint16, topic string) []byte {
	c := le.AppendUint16(nil, id)
	c = le.AppendUint16(c, 0)
	c = mcapString(c, topic)
	c = mcapString(c, "x-edr-raw")
	c = le.AppendUint32(c, 0)
	return mcapRecord(nil, opChannel, c)
}

// mcapMessage is a Message record.
func mcapMessage(ch uint16, seq uint32, t uint64, data []byte) []byte {
	m := le.AppendUint16(nil, ch)
	m = le.AppendUint32(m, seq)
	m = le.AppendUint64(m, t)
	m = le.AppendUint64(m, t)
	m = append(m, data...)
	return mcapRecord(nil, opMessage, m)
}

// mcapChunk is a Chunk record holding records (their CRC computed over
// them) compressed as stored, claiming uncompressed bytes.
func mcapChunk(start, end, uncompressed uint64, crc uint32, compression string, stored []byte) []byte {
	c := le.AppendUint64(nil, start)
	c = le.AppendUint64(c, end)
	c = le.AppendUint64(c, uncompressed)
	c = le.AppendUint32(c, crc)
	c = mcapString(c, compression)
	c = le.AppendUint64(c, uint64(len(stored)))
	c = append(c, stored...)
	return mcapRecord(nil, opChunk, c)
}

// mcapEnd appends DataEnd (CRC 0: not checked), no summary, a Footer and
// the closing magic.
func mcapEnd(b []byte) []byte {
	b = mcapRecord(b, opDataEnd, le.AppendUint32(nil, 0))
	f := le.AppendUint64(nil, 0)
	f = le.AppendUint64(f, 0)
	f = le.AppendUint32(f, 0)
	b = mcapRecord(b, opFooter, f)
	return append(b, mcapMagic...)
}

// mcapEndWithSummary appends DataEnd, the summary records, one
// SummaryOffset per opcode group, a Footer with a correct summary CRC and
// the closing magic.
func mcapEndWithSummary(b []byte, summary []byte) []byte {
	b = mcapRecord(b, opDataEnd, le.AppendUint32(nil, crc32.ChecksumIEEE(b)))
	start := uint64(len(b))
	b = append(b, summary...)
	offStart := uint64(len(b))
	f := le.AppendUint64(nil, start)
	f = le.AppendUint64(f, offStart)
	tail := append([]byte{opFooter}, le.AppendUint64(nil, uint64(len(f)+4))...)
	tail = append(tail, f...)
	crc := crc32.ChecksumIEEE(b[start:])
	crc = crc32.Update(crc, crc32.IEEETable, tail)
	b = append(b, tail...)
	b = le.AppendUint32(b, crc)
	return append(b, mcapMagic...)
}

// lz4Compress is an LZ4 frame of data as one compressed block (4 MiB
// blocks, independent, no checksums).
func lz4Compress(data []byte) []byte {
	const flg, bd = 0x60, 0x70
	b := le.AppendUint32(nil, 0x184D2204)
	b = append(b, flg, bd, lz4HC(flg, bd))
	out := make([]byte, lz4.CompressBlockBound(len(data)))
	var c lz4.Compressor
	n, err := c.CompressBlock(data, out)
	if err != nil || n == 0 {
		b = le.AppendUint32(b, uint32(len(data))|1<<31)
		b = append(b, data...)
	} else {
		b = le.AppendUint32(b, uint32(n))
		b = append(b, out[:n]...)
	}
	return le.AppendUint32(b, 0)
}
