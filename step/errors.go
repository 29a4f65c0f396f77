package step

import "errors"

// Sentinel errors.
var (
	// ErrOptions reports a loop, recorder or replay set up wrongly (a
	// topic used twice, an unknown mode, a check step cannot honour).
	ErrOptions = errors.New("step: bad options")
	// ErrCodec reports a codec that cannot be built (a layout that does
	// not fit the Go type) or a value it cannot encode or a message it
	// cannot decode.
	ErrCodec = errors.New("step: codec")
	// ErrRecording reports a recording that cannot drive the replay asked
	// for (a topic it does not hold, a type other than the codec's).
	ErrRecording = errors.New("step: recording")
	// ErrClosed is returned by Record on a closed Recorder.
	ErrClosed = errors.New("step: recorder closed")
)

// ErrMismatch is what Result.Err returns: the replay's outputs differ from
// the recording.
var ErrMismatch = errors.New("step: outputs differ from the recording")
