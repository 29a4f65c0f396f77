package dumpfile

import (
	"sync/atomic"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// maxMemory is the memory limit of the readers this package opens; 0 is
// the default (pack.DefaultMaxMemory).
var maxMemory atomic.Int64

// SetMaxMemory sets what every reader this package opens may allocate to
// decode one pack frame or MCAP chunk, or hold of MCAP chunks overlapping
// in time (pack.ReaderOptions.MaxMemory, mcap.ReaderOptions.MaxChunkSize
// and MaxRetained); n <= 0 restores the default, pack.DefaultMaxMemory
// (256 MiB). The offline tools set it from --max-memory. A file that
// needs more is refused as damaged, with the offset of what needs it.
func SetMaxMemory(n int64) { maxMemory.Store(max(n, 0)) }

// MaxMemory returns the readers' memory limit.
func MaxMemory() int64 {
	if n := maxMemory.Load(); n > 0 {
		return n
	}
	return pack.DefaultMaxMemory
}

func packOptions() pack.ReaderOptions {
	return pack.ReaderOptions{MaxMemory: MaxMemory(), ReadAhead: readAhead}
}

// readAhead is how many helper goroutines decode a pack dump's frames ahead of
// the verb reading it (pack.ReaderOptions.ReadAhead): CRC checks and
// decompression run on another core while the verb handles the messages.
const readAhead = 1

func mcapOptions() mcap.ReaderOptions {
	return mcap.ReaderOptions{MaxChunkSize: uint64(MaxMemory())}
}
