package arena

import "errors"

var (
	// ErrExhausted is returned by Alloc when no free block is large enough
	// right now; freeing blocks may make the request succeed later.
	ErrExhausted = errors.New("arena: exhausted")
	// ErrTooLarge is returned by Alloc for a size that can never fit: larger
	// than the largest block the arena can ever hand out.
	ErrTooLarge = errors.New("arena: block larger than the arena")
	// ErrBadFree is returned by Free for a block this arena did not hand out
	// or has already taken back.
	ErrBadFree = errors.New("arena: free of a block not allocated from this arena")
	// ErrBadSize is returned by New for a size that is not usable.
	ErrBadSize = errors.New("arena: bad size")
	// ErrNotSupported is returned by New on platforms without anonymous mmap.
	ErrNotSupported = errors.New("arena: not supported on this platform")
)
