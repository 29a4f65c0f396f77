package mcap

import (
	"github.com/edr-lite/edr-lite/ingest"

	"encoding/binary"
	"slices"
)

// Magic opens and closes every MCAP file: 0x89 "MCAP" '0' "\r\n".
var Magic = [8]byte{0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'}

// Opcode identifies a record type.
type Opcode uint8

// Record opcodes from the MCAP specification (major version 0).
const (
	OpHeader          Opcode = 0x01
	OpFooter          Opcode = 0x02
	OpSchema          Opcode = 0x03
	OpChannel         Opcode = 0x04
	OpMessage         Opcode = 0x05
	OpChunk           Opcode = 0x06
	OpMessageIndex    Opcode = 0x07
	OpChunkIndex      Opcode = 0x08
	OpAttachment      Opcode = 0x09
	OpAttachmentIndex Opcode = 0x0A
	OpStatistics      Opcode = 0x0B
	OpMetadata        Opcode = 0x0C
	OpMetadataIndex   Opcode = 0x0D
	OpSummaryOffset   Opcode = 0x0E
	OpDataEnd         Opcode = 0x0F
)

// Fixed sizes, in bytes.
const (
	magicLen        = 8
	recordPrefixLen = 1 + 8     // opcode + uint64 content length
	footerLen       = 8 + 8 + 4 // summary_start, summary_offset_start, summary_crc
	footerRecordLen = recordPrefixLen + footerLen
	dataEndLen      = 4             // data_section_crc
	messageFixedLen = 2 + 4 + 8 + 8 // channel_id, sequence, log_time, publish_time
	chunkFixedLen   = 8 + 8 + 8 + 4 // start, end, uncompressed_size, uncompressed_crc
	indexEntryLen   = 8 + 8         // Tuple<Timestamp, uint64>
	minFileLen      = magicLen + recordPrefixLen + 8 + magicLen + footerRecordLen - 8
)

// Compression names as the specification spells them in Chunk.compression.
const (
	CompressionNone = ""
	CompressionLZ4  = "lz4"
	CompressionZstd = "zstd"
)

// Encodings this package writes when a topic has no type information: the
// payload is opaque bytes. Viewers list such channels (topic, counts, times)
// but cannot decode the payload. The x- prefix is the specification's
// namespace for custom encodings.
const (
	// RawMessageEncoding is the Channel.message_encoding of opaque payloads.
	RawMessageEncoding = ingest.EncodingRaw
)

var le = binary.LittleEndian

func appendU16(b []byte, v uint16) []byte { return le.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return le.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return le.AppendUint64(b, v) }

func appendString(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendBytes32(b []byte, p []byte) []byte {
	b = appendU32(b, uint32(len(p)))
	return append(b, p...)
}

// beginRecord appends an opcode and a placeholder length; endRecord patches
// the length once the content is appended. start is the record's offset in b.
func beginRecord(b []byte, op Opcode) (out []byte, start int) {
	start = len(b)
	b = append(b, byte(op), 0, 0, 0, 0, 0, 0, 0, 0)
	return b, start
}

func endRecord(b []byte, start int) []byte {
	le.PutUint64(b[start+1:], uint64(len(b)-start-recordPrefixLen))
	return b
}

// appendStringMap appends a Map<string, string> with keys in sorted order
// (the specification leaves order free; sorting makes output reproducible).
func appendStringMap(b []byte, m map[string]string) []byte {
	lenAt := len(b)
	b = appendU32(b, 0)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	le.PutUint32(b[lenAt:], uint32(len(b)-lenAt-4))
	return b
}

// appendU16U64Map appends a Map<uint16, uint64> given as parallel slices.
func appendU16U64Map(b []byte, keys []uint16, vals []uint64) []byte {
	b = appendU32(b, uint32(len(keys)*(2+8)))
	for i, k := range keys {
		b = appendU16(b, k)
		b = appendU64(b, vals[i])
	}
	return b
}

// AppendHeader appends a Header record.
func AppendHeader(b []byte, profile, library string) []byte {
	b, s := beginRecord(b, OpHeader)
	b = appendString(b, profile)
	b = appendString(b, library)
	return endRecord(b, s)
}

// AppendSchema appends a Schema record.
func AppendSchema(b []byte, s *Schema) []byte {
	b, st := beginRecord(b, OpSchema)
	b = appendU16(b, s.ID)
	b = appendString(b, s.Name)
	b = appendString(b, s.Encoding)
	b = appendBytes32(b, s.Data)
	return endRecord(b, st)
}

// AppendChannel appends a Channel record.
func AppendChannel(b []byte, c *Channel) []byte {
	b, st := beginRecord(b, OpChannel)
	b = appendU16(b, c.ID)
	b = appendU16(b, c.SchemaID)
	b = appendString(b, c.Topic)
	b = appendString(b, c.MessageEncoding)
	b = appendStringMap(b, c.Metadata)
	return endRecord(b, st)
}

// AppendMessage appends a Message record.
func AppendMessage(b []byte, m *Message) []byte {
	return append(appendMessageHeader(b, m), m.Data...)
}

// appendMessageHeader appends a Message record without its data (which
// must follow: the length counts it).
func appendMessageHeader(b []byte, m *Message) []byte {
	b = append(b, byte(OpMessage))
	b = appendU64(b, uint64(messageFixedLen+len(m.Data)))
	b = appendU16(b, m.ChannelID)
	b = appendU32(b, m.Sequence)
	b = appendU64(b, m.LogTime)
	return appendU64(b, m.PublishTime)
}

// AppendMetadata appends a Metadata record.
func AppendMetadata(b []byte, name string, kv map[string]string) []byte {
	b, st := beginRecord(b, OpMetadata)
	b = appendString(b, name)
	b = appendStringMap(b, kv)
	return endRecord(b, st)
}

func appendDataEnd(b []byte, crc uint32) []byte {
	b = append(b, byte(OpDataEnd))
	b = appendU64(b, dataEndLen)
	return appendU32(b, crc)
}

func appendSummaryOffset(b []byte, op Opcode, start, length uint64) []byte {
	b = append(b, byte(OpSummaryOffset))
	b = appendU64(b, 1+8+8)
	b = append(b, byte(op))
	b = appendU64(b, start)
	return appendU64(b, length)
}

// appendFooterPrefix appends the Footer record up to (not including)
// summary_crc: the bytes the summary CRC covers last.
func appendFooterPrefix(b []byte, summaryStart, summaryOffsetStart uint64) []byte {
	b = append(b, byte(OpFooter))
	b = appendU64(b, footerLen)
	b = appendU64(b, summaryStart)
	return appendU64(b, summaryOffsetStart)
}
