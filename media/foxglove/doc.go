// Package foxglove encodes and decodes the Foxglove camera messages,
// foxglove.CompressedImage and foxglove.CompressedVideo (protobuf), and
// holds their schemas: SchemaCompressedImage and SchemaCompressedVideo
// name them, CompressedImageDescriptor and CompressedVideoDescriptor are
// their FileDescriptorSets (compiled from proto/foxglove/*.proto),
// AppendCompressedImage / AppendCompressedVideo write a message and
// DecodeCompressedImage / DecodeCompressedVideo read one back.
//
// It is apart from package media so that what reads such messages in a
// dump (dumpfile's B-frame check on every write to MCAP) links neither the
// JPEG and MP4 code nor image/jpeg: the ECU build (docs/ecu.md) has no
// camera files but still warns of video that Foxglove cannot play. Package
// media re-exports all of it under the same names.
//
// It is not for: camera files (package media), decoding pictures, or any
// other Foxglove schema.
//
// # Caveats
//
//   - Lifetimes: CompressedVideo.Data and CompressedImage.Data alias the
//     decoded message.
//   - Untrusted input: a message that does not decode is an error wrapping
//     ErrMalformed; nothing is allocated from a length it holds.
package foxglove
