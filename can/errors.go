package can

import "errors"

// Sentinel errors: what is wrong is in the wrapping message (file, line or
// offset, field).
var (
	// ErrFrame: bytes or fields that are not a CAN frame (Frame.Check,
	// Frame.Decode).
	ErrFrame = errors.New("can: bad frame")
	// ErrOptions: options a bus or source cannot run with.
	ErrOptions = errors.New("can: bad options")
)
