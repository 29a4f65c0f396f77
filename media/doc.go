// Package media reads and writes camera data: JPEG folders and H.264 /
// H.265 MP4 files, as foxglove.CompressedImage / foxglove.CompressedVideo
// messages.
package media
