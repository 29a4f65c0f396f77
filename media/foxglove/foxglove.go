package foxglove

import (
	_ "embed"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Schema names and encoding of the messages this package produces, as an
// MCAP writer or a dump's topic table names them.
const (
	SchemaCompressedImage = "foxglove.CompressedImage"
	SchemaCompressedVideo = "foxglove.CompressedVideo"
	SchemaEncoding        = "protobuf" // the schemas are FileDescriptorSets
)

// Field numbers of proto/foxglove/*.proto (checked against the compiled
// files by TestDescriptorsMatchProto).
const (
	fieldImageTimestamp protowire.Number = 1
	fieldImageData      protowire.Number = 2
	fieldImageFormat    protowire.Number = 3
	fieldImageFrameID   protowire.Number = 4

	fieldVideoTimestamp protowire.Number = 1
	fieldVideoFrameID   protowire.Number = 2
	fieldVideoData      protowire.Number = 3
	fieldVideoFormat    protowire.Number = 4

	fieldTimestampSeconds protowire.Number = 1
	fieldTimestampNanos   protowire.Number = 2
)

// The FileDescriptorSets (google/protobuf/timestamp.proto, then the
// message's own file), compiled from proto/foxglove/*.proto by
// "go test ./media -run TestDescriptorsMatchProto -update".
var (
	//go:embed proto/foxglove/CompressedImage.binpb
	compressedImageFDS []byte
	//go:embed proto/foxglove/CompressedVideo.binpb
	compressedVideoFDS []byte
)

// CompressedImageDescriptor returns a copy of the serialized
// google.protobuf.FileDescriptorSet of foxglove.CompressedImage (with
// google/protobuf/timestamp.proto), the schema data an MCAP file or a
// viewer needs to decode the messages.
func CompressedImageDescriptor() []byte { return append([]byte(nil), compressedImageFDS...) }

// CompressedVideoDescriptor returns a copy of the serialized
// FileDescriptorSet of foxglove.CompressedVideo; see
// CompressedImageDescriptor.
func CompressedVideoDescriptor() []byte { return append([]byte(nil), compressedVideoFDS...) }

// splitNs splits ns since the epoch into google.protobuf.Timestamp's
// seconds and non-negative nanos.
func splitNs(ns int64) (sec int64, nanos int64) {
	sec, nanos = ns/1e9, ns%1e9
	if nanos < 0 {
		sec--
		nanos += 1e9
	}
	return sec, nanos
}

func timestampSize(sec, nanos int64) int {
	n := 0
	if sec != 0 {
		n += 1 + protowire.SizeVarint(uint64(sec))
	}
	if nanos != 0 {
		n += 1 + protowire.SizeVarint(uint64(nanos))
	}
	return n
}

func appendTimestamp(dst []byte, field protowire.Number, ns int64) []byte {
	sec, nanos := splitNs(ns)
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(timestampSize(sec, nanos)))
	if sec != 0 {
		dst = protowire.AppendTag(dst, fieldTimestampSeconds, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(sec))
	}
	if nanos != 0 {
		dst = protowire.AppendTag(dst, fieldTimestampNanos, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(nanos))
	}
	return dst
}

func appendBytesField(dst []byte, field protowire.Number, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

func appendStringField(dst []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

// AppendCompressedImage appends a foxglove.CompressedImage message to dst:
// timestamp tsNs (ns since the epoch; always present), the image bytes,
// format ("jpeg", "png", ...) and frame_id. Fields are written in field
// number order, as proto.Marshal does, so the bytes equal the reference
// encoder's. It allocates only when dst must grow.
func AppendCompressedImage(dst []byte, tsNs int64, frameID, format string, data []byte) []byte {
	dst = appendTimestamp(dst, fieldImageTimestamp, tsNs)
	dst = appendBytesField(dst, fieldImageData, data)
	dst = appendStringField(dst, fieldImageFormat, format)
	return appendStringField(dst, fieldImageFrameID, frameID)
}

// AppendCompressedVideo appends a foxglove.CompressedVideo message to dst:
// timestamp tsNs (the frame's presentation time, ns since the epoch;
// always present), frame_id, the frame's bytes (Annex B for "h264" and
// "h265") and format. Like AppendCompressedImage, the bytes equal
// proto.Marshal's, and it allocates only when dst must grow.
func AppendCompressedVideo(dst []byte, tsNs int64, frameID, format string, data []byte) []byte {
	dst = appendTimestamp(dst, fieldVideoTimestamp, tsNs)
	dst = appendStringField(dst, fieldVideoFrameID, frameID)
	dst = appendBytesField(dst, fieldVideoData, data)
	return appendStringField(dst, fieldVideoFormat, format)
}

// CompressedImage is a decoded foxglove.CompressedImage. Data aliases the
// message it was decoded from.
type CompressedImage struct {
	TimestampNs int64
	FrameID     string
	Format      string
	Data        []byte
}

// CompressedVideo is a decoded foxglove.CompressedVideo. Data aliases the
// message it was decoded from.
type CompressedVideo struct {
	TimestampNs int64
	FrameID     string
	Format      string
	Data        []byte
}

// ErrMalformed: a message holds an impossible value (media.ErrMalformed
// is this error, so errors.Is answers the same through either package).
var ErrMalformed = errors.New("media: malformed")

var (
	errBadMessage   = fmt.Errorf("%w: bad protobuf message", ErrMalformed)
	errBadTimestamp = fmt.Errorf("%w: timestamp out of the int64 nanosecond range", ErrMalformed)
)

type compressedFields struct {
	timestamp, frameID, data, format protowire.Number
}

var (
	imageFields = compressedFields{fieldImageTimestamp, fieldImageFrameID, fieldImageData, fieldImageFormat}
	videoFields = compressedFields{fieldVideoTimestamp, fieldVideoFrameID, fieldVideoData, fieldVideoFormat}
)

// DecodeCompressedImage decodes a foxglove.CompressedImage into v, reusing
// v's strings when they are unchanged (so a stream of messages decodes
// without allocating). Unknown fields are skipped; a later occurrence of a
// field wins, as in protobuf. On error v is left zeroed.
func DecodeCompressedImage(msg []byte, v *CompressedImage) error {
	return decodeCompressed(msg, imageFields, &v.TimestampNs, &v.FrameID, &v.Format, &v.Data)
}

// DecodeCompressedVideo decodes a foxglove.CompressedVideo into v; see
// DecodeCompressedImage. v.Data aliases msg.
func DecodeCompressedVideo(msg []byte, v *CompressedVideo) error {
	return decodeCompressed(msg, videoFields, &v.TimestampNs, &v.FrameID, &v.Format, &v.Data)
}

// knownFormats are returned without allocating.
var knownFormats = [...]string{"h264", "h265", "jpeg", "png", "webp", "avif", "vp9", "av1"}

func setString(dst *string, b []byte) {
	if *dst == string(b) {
		return
	}
	for _, f := range knownFormats {
		if f == string(b) {
			*dst = f
			return
		}
	}
	*dst = string(b)
}

func decodeCompressed(msg []byte, f compressedFields, ts *int64, frameID, format *string, data *[]byte) (err error) {
	var sec, nanos int64
	*data = nil
	sawFrame, sawFormat := false, false
	defer func() {
		if err != nil {
			*ts, *frameID, *format, *data = 0, "", "", nil
		}
	}()
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return errBadMessage
		}
		msg = msg[n:]
		if typ != protowire.BytesType || (num != f.timestamp && num != f.frameID && num != f.data && num != f.format) {
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return errBadMessage
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return errBadMessage
		}
		msg = msg[n:]
		switch num {
		case f.timestamp:
			if sec, nanos, err = mergeTimestamp(v, sec, nanos); err != nil {
				return err
			}
		case f.frameID:
			setString(frameID, v)
			sawFrame = true
		case f.format:
			setString(format, v)
			sawFormat = true
		case f.data:
			*data = v
		}
	}
	if !sawFrame {
		*frameID = ""
	}
	if !sawFormat {
		*format = ""
	}
	if sec < 0 && nanos > 0 { // same signs, so the range check below is exact
		sec++
		nanos -= nsPerSec
	}
	if sec > math.MaxInt64/nsPerSec || sec < math.MinInt64/nsPerSec {
		return errBadTimestamp
	}
	t := sec * nsPerSec
	if (nanos > 0 && t > math.MaxInt64-nanos) || (nanos < 0 && t < math.MinInt64-nanos) {
		return errBadTimestamp
	}
	*ts = t + nanos
	return nil
}

// mergeTimestamp merges one google.protobuf.Timestamp occurrence into
// (sec, nanos), as protobuf merges repeated message fields.
func mergeTimestamp(b []byte, sec, nanos int64) (int64, int64, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, errBadMessage
		}
		b = b[n:]
		if typ == protowire.VarintType && (num == fieldTimestampSeconds || num == fieldTimestampNanos) {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, errBadMessage
			}
			b = b[n:]
			if num == fieldTimestampSeconds {
				sec = int64(v)
			} else {
				nanos = int64(int32(v))
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, 0, errBadMessage
		}
		b = b[n:]
	}
	return sec, nanos, nil
}

const nsPerSec int64 = 1e9
