package replay

import "errors"

// Sentinel errors.
var (
	// ErrOptions reports invalid options (a negative rate, a bad glob, an
	// unparsable address).
	ErrOptions = errors.New("replay: bad options")
	// ErrTooLarge is wrapped by an Output that cannot carry a message
	// (larger than a shm segment's max payload or a UDP datagram); the
	// player counts it as dropped and goes on.
	ErrTooLarge = errors.New("replay: message too large for the output")
	// ErrMismatch is returned when replayed rules do not fire the triggers
	// recorded in the dumps.
	ErrMismatch = errors.New("replay: triggers differ from the recording")
)
