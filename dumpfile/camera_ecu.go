//go:build ecu

package dumpfile

import (
	"fmt"
)

// The ECU build (go build -tags ecu, docs/ecu.md) reads and writes no
// camera files: package media (and image/jpeg) is not linked, and the
// formats table has no jpeg-dir or mp4 row. A camera file given to a verb,
// or a camera format asked for, is refused saying that the full build has
// them.

// cameraFormats: none in the ECU build.
var cameraFormats []format

// MediaFacts would be what reading a camera file found; the ECU build
// reads none, so Source.Media is always nil.
type MediaFacts struct{}

// Damaged returns nil: the ECU build reads no camera files.
func (s *Source) Damaged() []string { return nil }

const notBuiltCamera = "camera files (JPEG folders, MP4) are not in this build of edr-lite (the ECU build, go build -tags ecu): the full build reads and writes them (docs/ecu.md)"

// NotBuilt says why format is not in this build: jpeg-dir and mp4 are not;
// nil for the others (and for names that are no format at all).
func NotBuilt(format string) error {
	if format == FormatJPEGDir || format == FormatMP4 {
		return fmt.Errorf("--format %s: %s", format, notBuiltCamera)
	}
	return nil
}

// notBuiltFile names an MP4 file (its first bytes b) that the full build
// would read; it wraps ErrUnknownFormat, as for any file this build does
// not read.
func notBuiltFile(name string, b []byte) error {
	if isMP4(b) {
		return fmt.Errorf("%s: %w: an MP4 file: %s", name, ErrUnknownFormat, notBuiltCamera)
	}
	return nil
}

// notBuiltDir names a JPEG folder, likewise.
func notBuiltDir(path string) error {
	ok, err := isJPEGDir(path)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("%s: %w: a JPEG folder: %s", path, ErrUnknownFormat, notBuiltCamera)
	}
	return nil
}
