package media

import (
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/media/foxglove"
)

// Sentinel errors. Damage or hostile values found in an MP4 file are
// reported as a *BoxError whose Unwrap returns ErrMalformed, ErrUnsupported
// or ErrLimit, so callers test with errors.Is or errors.As.
var (
	// ErrMalformed: a box, table, NAL unit or message holds an impossible
	// value (the same error as foxglove.ErrMalformed, which the messages'
	// decoders return).
	ErrMalformed = foxglove.ErrMalformed
	// ErrUnsupported: valid input this package does not handle (a codec,
	// a box version, a multi-segment edit list feature).
	ErrUnsupported = errors.New("media: unsupported")
	// ErrLimit: the input exceeds a configured bound (MP4Options.MaxBoxBytes,
	// MaxSampleBytes).
	ErrLimit = errors.New("media: over a limit")
	// ErrNoTrack: the file has no H.264 or H.265 video track (or not the
	// one asked for).
	ErrNoTrack = errors.New("media: no H.264 or H.265 video track")
	// ErrNotJPEG: a file is not a JPEG image (no SOI marker, or
	// image/jpeg does not accept its header).
	ErrNotJPEG = errors.New("media: not a JPEG image")
	// ErrNoTime: no configured time source gave a time for a file.
	ErrNoTime = errors.New("media: no time")
	// ErrNoParameterSets: a video stream to write carries no SPS/PPS (or
	// VPS/SPS/PPS for H.265).
	ErrNoParameterSets = errors.New("media: no parameter sets in the stream")
)

// BoxError reports a box of an MP4 file that is damaged, hostile or not
// supported: which file, which box (its path from the top, e.g.
// "moov/trak[0]/mdia/minf/stbl/stsz"), the byte offset of its header, and
// why. A sample whose NAL units do not parse is reported on box "mdat"
// with the offset of the sample itself. Unwrap returns ErrMalformed,
// ErrUnsupported or ErrLimit.
type BoxError struct {
	File   string // file name, "" for a stream
	Box    string // box path
	Offset int64  // file offset of the box header (of the sample, for "mdat")
	Reason string // what is wrong
	Err    error  // sentinel; see Unwrap
}

func (e *BoxError) Error() string {
	f := e.File
	if f == "" {
		f = "<stream>"
	}
	return fmt.Sprintf("media: %s: box %s at offset %d: %s", f, e.Box, e.Offset, e.Reason)
}

// Unwrap returns the sentinel for the kind of problem.
func (e *BoxError) Unwrap() error { return e.Err }
