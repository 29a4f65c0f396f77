package report

import "errors"

var (
	// ErrUsage: an option or argument the report cannot work with (a
	// --schema or --fields value, an empty time range).
	ErrUsage = errors.New("report: bad option")
	// ErrNoImage: a camera message whose picture cannot be shown (an
	// unknown format, a picture larger than MaxPicturePixels, bytes the
	// decoder refuses).
	ErrNoImage = errors.New("report: no picture")
)
