package media

import "github.com/edr-lite/edr-lite/media/foxglove"

// The Foxglove camera messages and their schemas are package
// media/foxglove's (apart, so that a reader of such messages links no
// camera-file code: docs/ecu.md); these are the same, under the names
// this package has always had.

// Schema names and encoding of the messages this package produces.
const (
	SchemaCompressedImage = foxglove.SchemaCompressedImage
	SchemaCompressedVideo = foxglove.SchemaCompressedVideo
	SchemaEncoding        = foxglove.SchemaEncoding
)

// CompressedImage and CompressedVideo are foxglove's decoded messages.
type (
	CompressedImage = foxglove.CompressedImage
	CompressedVideo = foxglove.CompressedVideo
)

// CompressedImageDescriptor is foxglove.CompressedImageDescriptor.
func CompressedImageDescriptor() []byte { return foxglove.CompressedImageDescriptor() }

// CompressedVideoDescriptor is foxglove.CompressedVideoDescriptor.
func CompressedVideoDescriptor() []byte { return foxglove.CompressedVideoDescriptor() }

// AppendCompressedImage is foxglove.AppendCompressedImage.
func AppendCompressedImage(dst []byte, tsNs int64, frameID, format string, data []byte) []byte {
	return foxglove.AppendCompressedImage(dst, tsNs, frameID, format, data)
}

// AppendCompressedVideo is foxglove.AppendCompressedVideo.
func AppendCompressedVideo(dst []byte, tsNs int64, frameID, format string, data []byte) []byte {
	return foxglove.AppendCompressedVideo(dst, tsNs, frameID, format, data)
}

// DecodeCompressedImage is foxglove.DecodeCompressedImage.
func DecodeCompressedImage(msg []byte, v *CompressedImage) error {
	return foxglove.DecodeCompressedImage(msg, v)
}

// DecodeCompressedVideo is foxglove.DecodeCompressedVideo.
func DecodeCompressedVideo(msg []byte, v *CompressedVideo) error {
	return foxglove.DecodeCompressedVideo(msg, v)
}

const nsPerSec int64 = 1e9
