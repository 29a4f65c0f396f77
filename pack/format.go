package pack

import (
	"encoding/binary"
	"hash/crc32"
)

// Byte layout constants; FORMAT.md is the normative description. All
// integers are little-endian.
const (
	// FormatMajor is the major format version this package writes and the
	// newest it reads. Readers reject files with a larger major version.
	FormatMajor = 1
	// FormatMinor is the minor format version this package writes. Minor
	// versions only add optional sections; readers accept any minor.
	FormatMinor = 1

	// HeaderSize is the size of the file header.
	HeaderSize = 64
	// WriterNameSize is the size of the header's NUL-padded writer field.
	WriterNameSize = 36

	// FrameHeaderSize is the size of a frame record's fixed header.
	FrameHeaderSize = 48
	// BlockLenSize is the size of one entry of a frame's block-length table.
	BlockLenSize = 4

	// SectionHeaderSize is the size of a section record's fixed header.
	SectionHeaderSize = 16

	// TrailerSize is the size of the trailer at the end of a closed file.
	TrailerSize = 32

	// IndexEntrySize is the size of one frame entry in the index section.
	IndexEntrySize = 24
	// IndexFixedSize is the size of the index section's fixed prefix.
	IndexFixedSize = 16

	// MaxFrameSize bounds a frame record (header, meta, block table and
	// stored data) and a frame's uncompressed data.
	MaxFrameSize = 1 << 30
	// MaxSectionSize bounds a section record's payload.
	MaxSectionSize = 1 << 30
	// MaxCompressionRatio bounds uncompressed/stored data length of a
	// compressed frame, so a reader never allocates more than this many
	// times the bytes a frame occupies in the file. It is the most either
	// codec can reach (a zstd RLE block: 128 KiB from 4 bytes; LZ4 reaches
	// about 255), so no writer ever has to refuse a well-compressing frame.
	// For zstd the reader also walks the frame's block headers and rejects
	// a stated length the blocks cannot produce before allocating.
	MaxCompressionRatio = 32768
)

// Magic numbers.
var (
	// FileMagic opens every pack file.
	FileMagic = [8]byte{'E', 'D', 'R', 'P', 'A', 'C', 'K', 0}
	// TrailerEndMagic closes the trailer, the last 8 bytes of a closed file.
	TrailerEndMagic = [8]byte{'E', 'D', 'R', 'P', 'E', 'N', 'D', 0}
)

// Record magics (the first 4 bytes of a record, read as little-endian uint32).
const (
	frameMagic   = uint32('E') | uint32('F')<<8 | uint32('R')<<16 | uint32('M')<<24 // "EFRM"
	sectionMagic = uint32('E') | uint32('S')<<8 | uint32('E')<<16 | uint32('C')<<24 // "ESEC"
	trailerMagic = uint32('E') | uint32('T')<<8 | uint32('R')<<16 | uint32('L')<<24 // "ETRL"
)

// Section kinds. Readers skip kinds they do not know.
const (
	SectionMetadata = 1 // a named metadata blob
	SectionIndex    = 2 // the frame index, topic table and metadata table
	SectionType     = 3 // a topic's type from the next frame on (types.go); since 1.1
	// SectionAttachment is a file stored with the dump (attach.go): added
	// to 1.1 without a version change (older readers skip it).
	SectionAttachment = 4
)

// Index flags.
const (
	indexFlagTimeSorted = 1 // frame times never decrease in file order
)

// Compression selects the codec of a frame's data section.
type Compression uint8

const (
	// CompressNone stores data blocks as they are.
	CompressNone Compression = 0
	// CompressLZ4 stores the data section as one LZ4 block (no LZ4 frame).
	CompressLZ4 Compression = 1
	// CompressZstd stores the data section as one zstd frame.
	CompressZstd Compression = 2
)

// String returns "none", "lz4", "zstd" or the number.
func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressLZ4:
		return "lz4"
	case CompressZstd:
		return "zstd"
	}
	return "codec(" + itoa(int(c)) + ")"
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32                 { return crc32.Checksum(b, castagnoli) }
func crcUpdate(c uint32, b []byte) uint32 { return crc32.Update(c, castagnoli, b) }

var le = binary.LittleEndian

// FileHeader is the decoded file header.
type FileHeader struct {
	Major, Minor uint16
	Flags        uint32
	CreatedNs    int64
	Writer       string
}

func putFileHeader(b []byte, h FileHeader) {
	copy(b[0:8], FileMagic[:])
	le.PutUint16(b[8:], h.Major)
	le.PutUint16(b[10:], h.Minor)
	le.PutUint32(b[12:], h.Flags)
	le.PutUint64(b[16:], uint64(h.CreatedNs))
	w := b[24 : 24+WriterNameSize]
	clear(w)
	copy(w, h.Writer)
	le.PutUint32(b[60:], crc(b[:60]))
}

func parseFileHeader(path string, b []byte) (FileHeader, error) {
	var h FileHeader
	if len(b) < HeaderSize {
		if len(b) < 8 || [8]byte(b[:8]) != FileMagic {
			return h, corrupt(path, 0, ErrBadMagic, "not a pack file (%d bytes)", len(b))
		}
		return h, corrupt(path, 0, ErrTruncated, "file header truncated at %d of %d bytes", len(b), HeaderSize)
	}
	if [8]byte(b[:8]) != FileMagic {
		return h, corrupt(path, 0, ErrBadMagic, "not a pack file: magic %q", b[:8])
	}
	if got, want := le.Uint32(b[60:]), crc(b[:60]); got != want {
		return h, corrupt(path, 60, ErrChecksum, "file header CRC32C %#08x, computed %#08x", got, want)
	}
	h.Major = le.Uint16(b[8:])
	h.Minor = le.Uint16(b[10:])
	h.Flags = le.Uint32(b[12:])
	h.CreatedNs = int64(le.Uint64(b[16:]))
	w := b[24 : 24+WriterNameSize]
	n := 0
	for n < len(w) && w[n] != 0 {
		n++
	}
	h.Writer = string(w[:n])
	if h.Major > FormatMajor {
		return h, &CorruptError{Path: path, Offset: 8, Err: ErrUnsupportedVersion,
			Reason: "format version " + itoa(int(h.Major)) + "." + itoa(int(h.Minor)) +
				" is newer than this reader (" + itoa(FormatMajor) + ".x)"}
	}
	return h, nil
}

// frameHeader is the decoded fixed header of a frame record.
type frameHeader struct {
	headCRC  uint32
	dataCRC  uint32
	metaLen  uint32
	nblocks  uint32
	stored   uint32 // stored data section length
	rawLen   uint32 // uncompressed data length
	codec    Compression
	flags    uint8
	timeNs   int64
	endNs    int64
	recLen   int64 // whole record
	tableOff int64 // relative to record start
	dataOff  int64 // relative to record start
}

func putFrameHeader(b []byte, h *frameHeader) {
	le.PutUint32(b[0:], frameMagic)
	// b[4:8] head CRC, written last by the caller
	le.PutUint32(b[8:], h.dataCRC)
	le.PutUint32(b[12:], h.metaLen)
	le.PutUint32(b[16:], h.nblocks)
	le.PutUint32(b[20:], h.stored)
	le.PutUint32(b[24:], h.rawLen)
	b[28] = byte(h.codec)
	b[29] = h.flags
	b[30], b[31] = 0, 0
	le.PutUint64(b[32:], uint64(h.timeNs))
	le.PutUint64(b[40:], uint64(h.endNs))
}

// parseFrameHeader decodes and bounds-checks the fixed header of the frame
// record at b[0:] (b extends to the end of the readable region). It checks
// lengths only; CRCs are the caller's. The returned reason is a static
// string (no allocation) when err is non-nil.
func parseFrameHeader(b []byte, h *frameHeader) (reason string, err error) {
	return parseFrameHeaderAvail(b, int64(len(b)), h)
}

// parseFrameHeaderAvail is parseFrameHeader with the header in b and avail
// bytes readable from the record's start.
func parseFrameHeaderAvail(b []byte, avail int64, h *frameHeader) (reason string, err error) {
	if len(b) < FrameHeaderSize || avail < FrameHeaderSize {
		return "frame header truncated", ErrTruncated
	}
	if le.Uint32(b) != frameMagic {
		return "bad frame magic", ErrCorrupt
	}
	h.headCRC = le.Uint32(b[4:])
	h.dataCRC = le.Uint32(b[8:])
	h.metaLen = le.Uint32(b[12:])
	h.nblocks = le.Uint32(b[16:])
	h.stored = le.Uint32(b[20:])
	h.rawLen = le.Uint32(b[24:])
	h.codec = Compression(b[28])
	h.flags = b[29]
	h.timeNs = int64(le.Uint64(b[32:]))
	h.endNs = int64(le.Uint64(b[40:]))
	rec := int64(FrameHeaderSize) + int64(h.metaLen) + int64(h.nblocks)*BlockLenSize + int64(h.stored)
	if rec > MaxFrameSize || h.rawLen > MaxFrameSize {
		return "frame length exceeds MaxFrameSize", ErrCorrupt
	}
	if rec > avail {
		return "frame runs past end of file", ErrTruncated
	}
	switch h.codec {
	case CompressNone:
		if h.stored != h.rawLen {
			return "uncompressed frame with stored length != data length", ErrCorrupt
		}
	case CompressLZ4, CompressZstd:
		if uint64(h.rawLen) > uint64(h.stored)*MaxCompressionRatio {
			return "compressed frame exceeds MaxCompressionRatio", ErrCorrupt
		}
	default:
		return "unknown compression codec", ErrUnsupportedCodec
	}
	h.recLen = rec
	h.tableOff = FrameHeaderSize + int64(h.metaLen)
	h.dataOff = h.tableOff + int64(h.nblocks)*BlockLenSize
	return "", nil
}

// headCRCOf computes the head CRC of a record whose header is parsed.
func headCRCOf(b []byte, h *frameHeader) uint32 {
	return crc(b[8:h.dataOff])
}

// checkBlockTable verifies that the block lengths sum to rawLen.
func checkBlockTable(table []byte, rawLen uint32) bool {
	var sum uint64
	for i := 0; i+4 <= len(table); i += 4 {
		sum += uint64(le.Uint32(table[i:]))
	}
	return sum == uint64(rawLen)
}

// section header helpers

func putSectionHeader(b []byte, kind uint32, payload []byte) {
	le.PutUint32(b[0:], sectionMagic)
	le.PutUint32(b[8:], kind)
	le.PutUint32(b[12:], uint32(len(payload)))
	c := crcUpdate(crc(b[8:16]), payload)
	le.PutUint32(b[4:], c)
}

// parseSection checks the section record at b and returns kind, payload and
// record length.
func parseSection(b []byte) (kind uint32, payload []byte, rec int64, reason string, err error) {
	if len(b) < SectionHeaderSize {
		return 0, nil, 0, "section header truncated", ErrTruncated
	}
	if le.Uint32(b) != sectionMagic {
		return 0, nil, 0, "bad section magic", ErrCorrupt
	}
	n := le.Uint32(b[12:])
	if n > MaxSectionSize {
		return 0, nil, 0, "section length exceeds MaxSectionSize", ErrCorrupt
	}
	rec = SectionHeaderSize + int64(n)
	if rec > int64(len(b)) {
		return 0, nil, 0, "section runs past end of file", ErrTruncated
	}
	payload = b[SectionHeaderSize:rec]
	if crcUpdate(crc(b[8:16]), payload) != le.Uint32(b[4:]) {
		return 0, nil, 0, "section CRC32C mismatch", ErrChecksum
	}
	return le.Uint32(b[8:]), payload, rec, "", nil
}

func putTrailer(b []byte, indexOff, fileSize int64) {
	le.PutUint32(b[0:], trailerMagic)
	le.PutUint64(b[8:], uint64(indexOff))
	le.PutUint64(b[16:], uint64(fileSize))
	copy(b[24:32], TrailerEndMagic[:])
	le.PutUint32(b[4:], crc(b[8:32]))
}

// parseTrailer returns the index offset when data ends with a valid trailer.
func parseTrailer(data []byte) (indexOff int64, ok bool) {
	if len(data) < HeaderSize+TrailerSize {
		return 0, false
	}
	b := data[len(data)-TrailerSize:]
	if le.Uint32(b) != trailerMagic || [8]byte(b[24:32]) != TrailerEndMagic {
		return 0, false
	}
	if crc(b[8:32]) != le.Uint32(b[4:]) {
		return 0, false
	}
	off := int64(le.Uint64(b[8:]))
	if int64(le.Uint64(b[16:])) != int64(len(data)) || off < HeaderSize || off > int64(len(data))-TrailerSize-SectionHeaderSize {
		return 0, false
	}
	return off, true
}
