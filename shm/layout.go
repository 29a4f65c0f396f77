package shm

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/edr-lite/edr-lite/ingest"
)

// Segment layout, versions 1 and 2. See FORMAT.md; the C header
// include/edr_shm.h repeats these numbers and a test checks that both agree.
const (
	// Version is the newest segment version: 2, a segment that declares
	// its topic's type (message encoding and schema). A producer that
	// declares none writes version 1, which every consumer reads.
	Version = 2
	// VersionUntyped is the version of a segment that declares no type.
	VersionUntyped = 1

	HeaderSize       = 4096 // bytes of the fixed header; the schema area (v2) or the ring (v1) starts here, page-aligned
	RecordHeaderSize = 24   // length u32, kind u32, seq u64, gen_ns i64
	RecordAlign      = 8

	MinCapacity = 4096    // smallest ring
	MaxCapacity = 1 << 30 // largest ring

	MaxNameLen    = 256
	MaxTypeLen    = 128 // the schema (type) name
	MaxChannelLen = 64
	// MaxEncodingLen bounds the message encoding and the schema
	// encoding of a version 2 segment.
	MaxEncodingLen = 64
	// MaxSchemaSize is the largest schema a segment carries
	// (ingest.MaxSchemaSize, 4 MiB). A consumer does not read a larger
	// one: the topic is recorded as raw bytes and the error reported.
	MaxSchemaSize = ingest.MaxSchemaSize
	// maxSchemaArea bounds header_size - HeaderSize in a hostile segment:
	// schema_len is a u32, its area rounded up to a page.
	maxSchemaArea = 1<<32 + HeaderSize

	// Header field offsets.
	offMagic           = 0
	offVersion         = 8
	offHeaderSize      = 12
	offTotalSize       = 16
	offCapacity        = 24
	offMaxPayload      = 32
	offFlags           = 36
	offPID             = 40
	offUID             = 44
	offStartNs         = 48
	offHeartbeatPeriod = 56
	offNameLen         = 64
	offTypeLen         = 66
	offChannelLen      = 68
	offEncodingLen     = 70 // v2
	offSchemaEncLen    = 72 // v2
	offSchemaLen       = 76 // v2: u32 bytes of schema at HeaderSize
	offName            = 96
	offType            = offName + MaxNameLen               // 352
	offChannel         = offType + MaxTypeLen               // 480
	offEncoding        = offChannel + MaxChannelLen         // 544, v2
	offSchemaEncoding  = offEncoding + MaxEncodingLen       // 608, v2
	offImmutableEnd    = offSchemaEncoding + MaxEncodingLen // 672

	// CursorLine is the producer's hot line (written on every publish).
	CursorLine     = 1024
	offWriteCursor = CursorLine + 0
	offTailCursor  = CursorLine + 8
	offNextSeq     = CursorLine + 16
	offOversize    = CursorLine + 24

	// StateLine is the producer's slow line.
	StateLine      = 1152
	offHeartbeatNs = StateLine + 0
	offState       = StateLine + 8

	// ConsumerLine is written by consumers.
	ConsumerLine = 1280
	offWaiters   = ConsumerLine + 0

	// Record kinds.
	KindMessage = 1
	KindPadding = 2

	// Producer states.
	StateLive   = 1
	StateClosed = 2

	// SegmentSuffix ends every segment file name.
	SegmentSuffix = ".seg"

	maxEscapedName = 200
)

// Magic opens every segment.
var Magic = [8]byte{'E', 'D', 'R', 'S', 'H', 'M', 0, 1}

// recordSize is the ring bytes a message with an n-byte payload occupies.
// n is a uint64 so that a length read from the ring (a u32, maybe
// scribbled) is never converted to int: on 32-bit a length of 2^31 or more
// would turn negative and wrap the size to a few bytes.
func recordSize(n uint64) uint64 {
	return (n + RecordHeaderSize + RecordAlign - 1) &^ (RecordAlign - 1)
}

// maxPayloadFor is the largest max_payload a ring of capacity c allows: one
// record must fit in half the ring.
func maxPayloadFor(c uint64) int {
	return int(c/2) - RecordHeaderSize
}

// header is the immutable part of a segment header, decoded.
type header struct {
	version         uint32
	headerSize      uint64 // the ring's file offset: HeaderSize + the schema area
	totalSize       uint64
	capacity        uint64
	maxPayload      uint32
	pid             uint32
	uid             uint32
	startNs         int64
	heartbeatPeriod int64
	name, typ, chn  string
	// v2: the message and schema encodings, and the schema's length
	// (the schema itself is at HeaderSize, read by the consumer apart).
	enc, schemaEnc string
	schemaLen      uint32
}

// schemaArea is the bytes a v2 segment's schema takes between the fixed
// header and the ring: its length rounded up to a page.
func schemaArea(n uint64) uint64 { return (n + HeaderSize - 1) &^ (HeaderSize - 1) }

// encodeHeader writes h into b (at least HeaderSize bytes, zeroed) with
// state live and zero cursors.
func encodeHeader(b []byte, h *header) {
	le := binary.LittleEndian
	copy(b[offMagic:], Magic[:])
	le.PutUint32(b[offVersion:], h.version)
	le.PutUint32(b[offHeaderSize:], uint32(h.headerSize))
	le.PutUint64(b[offTotalSize:], h.totalSize)
	le.PutUint64(b[offCapacity:], h.capacity)
	le.PutUint32(b[offMaxPayload:], h.maxPayload)
	le.PutUint32(b[offPID:], h.pid)
	le.PutUint32(b[offUID:], h.uid)
	le.PutUint64(b[offStartNs:], uint64(h.startNs))
	le.PutUint64(b[offHeartbeatPeriod:], uint64(h.heartbeatPeriod))
	le.PutUint16(b[offNameLen:], uint16(len(h.name)))
	le.PutUint16(b[offTypeLen:], uint16(len(h.typ)))
	le.PutUint16(b[offChannelLen:], uint16(len(h.chn)))
	copy(b[offName:offName+MaxNameLen], h.name)
	copy(b[offType:offType+MaxTypeLen], h.typ)
	copy(b[offChannel:offChannel+MaxChannelLen], h.chn)
	if h.version >= Version {
		le.PutUint16(b[offEncodingLen:], uint16(len(h.enc)))
		le.PutUint16(b[offSchemaEncLen:], uint16(len(h.schemaEnc)))
		le.PutUint32(b[offSchemaLen:], h.schemaLen)
		copy(b[offEncoding:offEncoding+MaxEncodingLen], h.enc)
		copy(b[offSchemaEncoding:offSchemaEncoding+MaxEncodingLen], h.schemaEnc)
	}
	le.PutUint64(b[offHeartbeatNs:], uint64(h.startNs))
	le.PutUint32(b[offState:], StateLive)
}

// fieldError is a header validation failure before it is tied to a segment.
type fieldError struct {
	field  string
	offset int64
	err    error
}

// decodeHeader validates the immutable header fields in b against the mapped
// file size and returns them. It never reads outside b.
func decodeHeader(b []byte, fileSize int64, maxPayloadLimit uint32) (header, *fieldError) {
	var h header
	le := binary.LittleEndian
	bad := func(field string, off int, base error, format string, args ...any) (header, *fieldError) {
		return header{}, &fieldError{field, int64(off), corruptf(base, format, args...)}
	}
	if len(b) < HeaderSize || fileSize < HeaderSize {
		return bad("header", 0, ErrTruncated, "file is %d bytes, header needs %d", fileSize, HeaderSize)
	}
	if [8]byte(b[offMagic:offMagic+8]) != Magic {
		return bad("magic", offMagic, ErrBadMagic, "%q", b[offMagic:offMagic+8])
	}
	h.version = le.Uint32(b[offVersion:])
	if h.version != VersionUntyped && h.version != Version {
		return bad("version", offVersion, ErrBadVersion, "%d, want %d or %d", h.version, VersionUntyped, Version)
	}
	h.headerSize = HeaderSize
	if h.version >= Version {
		h.schemaLen = le.Uint32(b[offSchemaLen:])
		h.headerSize += schemaArea(uint64(h.schemaLen))
	}
	if v := le.Uint32(b[offHeaderSize:]); uint64(v) != h.headerSize {
		return bad("header_size", offHeaderSize, nil, "%d, want %d (version %d, schema_len %d)", v, h.headerSize, h.version, h.schemaLen)
	}
	h.capacity = le.Uint64(b[offCapacity:])
	if h.capacity < MinCapacity || h.capacity > MaxCapacity || h.capacity&(h.capacity-1) != 0 {
		return bad("capacity", offCapacity, nil, "%d is not a power of two in [%d, %d]", h.capacity, MinCapacity, MaxCapacity)
	}
	h.totalSize = le.Uint64(b[offTotalSize:])
	if h.totalSize != h.headerSize+h.capacity {
		return bad("total_size", offTotalSize, nil, "%d, want header_size+capacity = %d", h.totalSize, h.headerSize+h.capacity)
	}
	if uint64(fileSize) != h.totalSize {
		return bad("total_size", offTotalSize, ErrTruncated, "header says %d bytes, file has %d", h.totalSize, fileSize)
	}
	h.maxPayload = le.Uint32(b[offMaxPayload:])
	if int64(h.maxPayload) > int64(maxPayloadFor(h.capacity)) || h.maxPayload > maxPayloadLimit {
		return bad("max_payload", offMaxPayload, nil, "%d exceeds min(capacity/2-%d = %d, consumer limit %d)",
			h.maxPayload, RecordHeaderSize, maxPayloadFor(h.capacity), maxPayloadLimit)
	}
	if f := le.Uint32(b[offFlags:]); f != 0 {
		return bad("flags", offFlags, nil, "unknown flags %#x", f)
	}
	h.pid = le.Uint32(b[offPID:])
	h.uid = le.Uint32(b[offUID:])
	h.startNs = int64(le.Uint64(b[offStartNs:]))
	h.heartbeatPeriod = int64(le.Uint64(b[offHeartbeatPeriod:]))
	if h.heartbeatPeriod < 0 {
		return bad("heartbeat_period_ns", offHeartbeatPeriod, nil, "negative: %d", h.heartbeatPeriod)
	}
	var fe *fieldError
	if h.name, fe = decodeString(b, "name", offNameLen, offName, MaxNameLen, 1); fe != nil {
		return header{}, fe
	}
	if h.typ, fe = decodeString(b, "type", offTypeLen, offType, MaxTypeLen, 0); fe != nil {
		return header{}, fe
	}
	if h.chn, fe = decodeString(b, "channel", offChannelLen, offChannel, MaxChannelLen, 0); fe != nil {
		return header{}, fe
	}
	if h.version >= Version {
		// A v2 segment declares a message encoding; what the encodings
		// and the schema say is checked by the recorder (ingest.Type
		// Validate, then parsing), which records the topic as raw bytes
		// when they do not check out.
		if h.enc, fe = decodeString(b, "encoding", offEncodingLen, offEncoding, MaxEncodingLen, 1); fe != nil {
			return header{}, fe
		}
		if h.schemaEnc, fe = decodeString(b, "schema_encoding", offSchemaEncLen, offSchemaEncoding, MaxEncodingLen, 0); fe != nil {
			return header{}, fe
		}
	}
	return h, nil
}

func decodeString(b []byte, field string, offLen, off, max, min int) (string, *fieldError) {
	n := int(binary.LittleEndian.Uint16(b[offLen:]))
	if n < min || n > max {
		return "", &fieldError{field + "_len", int64(offLen), corruptf(nil, "%d not in [%d, %d]", n, min, max)}
	}
	s := b[off : off+n]
	if err := checkText(s); err != nil {
		return "", &fieldError{field, int64(off), corruptf(nil, "%v", err)}
	}
	for i, c := range b[off+n : off+max] {
		if c != 0 {
			return "", &fieldError{field, int64(off + n + i), corruptf(nil, "unused byte %d is %#x, not zero", n+i, c)}
		}
	}
	return string(s), nil
}

// checkText accepts valid UTF-8 without control characters.
func checkText[T string | []byte](s T) error {
	if !utf8.Valid([]byte(s)) {
		return fmt.Errorf("not valid UTF-8")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("control byte %#x at %d", c, i)
		}
	}
	return nil
}

// checkType validates a declared type the way the consumer will, and
// returns the segment version it needs: VersionUntyped for none (or a bare
// type name), Version for a message encoding and schema.
func checkType(t ingest.Type) (uint32, error) {
	if t.MessageEncoding == "" {
		if t.Schema.Encoding != "" || len(t.Schema.Data) > 0 {
			return 0, fmt.Errorf("%w: a schema (%q, %d bytes) without a message encoding", ErrBadOption, t.Schema.Encoding, len(t.Schema.Data))
		}
		return VersionUntyped, nil
	}
	if err := t.Validate(); err != nil {
		return 0, fmt.Errorf("%w: type: %w", ErrBadOption, err)
	}
	for _, e := range []struct{ what, v string }{{"message encoding", t.MessageEncoding}, {"schema encoding", t.Schema.Encoding}} {
		if len(e.v) > MaxEncodingLen {
			return 0, fmt.Errorf("%w: %s %q is %d bytes, at most %d", ErrBadName, e.what, e.v, len(e.v), MaxEncodingLen)
		}
	}
	return Version, nil
}

// checkTopic validates a topic's strings the way the consumer will.
func checkTopic(name, typ, channel string) error {
	f := func(what, s string, min, max int) error {
		if len(s) < min || len(s) > max {
			return fmt.Errorf("%w: %s %q is %d bytes, want %d..%d", ErrBadName, what, s, len(s), min, max)
		}
		if err := checkText(s); err != nil {
			return fmt.Errorf("%w: %s %q: %v", ErrBadName, what, s, err)
		}
		return nil
	}
	if err := f("name", name, 1, MaxNameLen); err != nil {
		return err
	}
	if err := f("type", typ, 0, MaxTypeLen); err != nil {
		return err
	}
	return f("channel", channel, 0, MaxChannelLen)
}

// SegmentFileName is the file name (no directory) of the segment carrying
// topic name on channel: safe as a single path element whatever the topic
// name holds (no '/', no "..", no leading '.'), unique per (name, channel).
func SegmentFileName(name, channel string) string {
	var sb strings.Builder
	escape(&sb, name)
	sb.WriteByte('~')
	escape(&sb, channel)
	s := sb.String()
	if len(s) > maxEscapedName {
		h := fnv.New64a()
		h.Write([]byte(name + "~" + channel))
		s = fmt.Sprintf("%s#%016x", s[:maxEscapedName-17], h.Sum64())
	}
	return s + SegmentSuffix
}

func escape(sb *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
			sb.WriteByte(c)
		case c == '.' && i > 0:
			sb.WriteByte(c)
		default:
			sb.WriteByte('%')
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
		}
	}
}
