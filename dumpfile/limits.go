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
	return pack.ReaderOptions{MaxMemory: MaxMemory(), ReadAhead: readAhead, SkipDamaged: skipDamaged.Load() != nil}
}

// skipDamaged is the report of SetSkipDamaged; nil: damage stops a read.
var skipDamaged atomic.Pointer[func(path, what string)]

// SetSkipDamaged makes the readers this package opens read past damage:
// pack readers skip a damaged frame or type section and go on
// (pack.ReaderOptions.SkipDamaged), an MCAP file that does not verify is
// read through a salvaged copy (mcap.Recover: every intact chunk). report
// is told, once a reader is done with a file (Walk, WalkFrom, a Source's
// Close; Open for an MCAP file), what was skipped there, in a sentence,
// when anything was. nil restores the default: damage stops a read with
// its error. cat and export set it from --skip-damaged.
func SetSkipDamaged(report func(path, what string)) {
	if report == nil {
		skipDamaged.Store(nil)
		return
	}
	skipDamaged.Store(&report)
}

// reportSkipped tells SetSkipDamaged's report what a reader of path
// skipped, when it skipped anything.
func reportSkipped(path string, sk pack.Skipped) {
	if fn := skipDamaged.Load(); fn != nil && sk.Any() {
		(*fn)(path, sk.String())
	}
}

// readAhead is how many helper goroutines decode a pack dump's frames ahead of
// the verb reading it (pack.ReaderOptions.ReadAhead): CRC checks, meta
// decoding and decompression run on other cores while the verb handles the
// messages. Two: with small messages the decoding of a frame takes about
// twice what the verb does with it (replay --asfast at 64 B: the helper 54 %
// of the process's CPU, the player 29 %), so one helper left the verb
// waiting; two decode frames k+1 and k+2 side by side (in file order, the
// memory bound shared).
const readAhead = 2

func mcapOptions() mcap.ReaderOptions {
	return mcap.ReaderOptions{MaxChunkSize: uint64(MaxMemory())}
}
