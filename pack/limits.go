// Memory limits of the readers: what decoding one frame may cost, checked
// against what the frame really holds before anything is allocated.

package pack

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// DefaultMaxMemory is the most a reader allocates to decode one frame when
// ReaderOptions.MaxMemory is 0: 256 MiB. The offline tools raise it with
// --max-memory.
const DefaultMaxMemory = 256 << 20

// What a decoded frame costs beyond the file's own (mapped) bytes: a
// Message per message of the meta, a slice header per data block, and the
// decompressed data of a compressed frame. messageCost is Message's size on
// 64-bit hosts (less on 32-bit).
const (
	messageCost = 80
	blockCost   = 24
)

// MaxFrameMessages is the most messages a Writer puts in one frame of its
// own (Add): a frame of many tiny or empty messages is closed at this
// count whatever its size, so every frame a Writer makes decodes within
// DefaultMaxMemory (a reader may read frames of other writers with more).
const MaxFrameMessages = 1 << 16

// ErrMemoryLimit: decoding a frame would take more memory than the
// reader's limit (ReaderOptions.MaxMemory).
var ErrMemoryLimit = errors.New("pack: over the memory limit")

// countMessages counts the messages (field data_list) of a frame meta
// without decoding them; ok is false when the meta does not parse (the
// decoder then says why).
func countMessages(b []byte) (n int, ok bool) {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return n, false
		}
		b = b[k:]
		k = protowire.ConsumeFieldValue(num, typ, b)
		if k < 0 {
			return n, false
		}
		if num == fieldFrameDataList && typ == protowire.BytesType {
			n++
		}
		b = b[k:]
	}
	return n, true
}

// frameCost is the memory decoding the frame with header h and meta
// (holding msgs messages) takes; data adds the decompressed bytes of a
// compressed frame.
func frameCost(h *frameHeader, msgs int, data bool) int64 {
	c := int64(msgs) * messageCost
	if data {
		c += int64(h.nblocks) * blockCost
		if h.codec != CompressNone {
			c += int64(h.rawLen)
		}
	}
	return c
}

// memoryError is the CorruptError of a frame at off that would cost more
// than limit to decode.
func memoryError(path string, off int64, h *frameHeader, msgs int, data bool, limit int64) *CorruptError {
	what := fmt.Sprintf("%d messages", msgs)
	if data {
		what += fmt.Sprintf(", %d data blocks", h.nblocks)
		if h.codec != CompressNone {
			what += fmt.Sprintf(", %d bytes decompressed", h.rawLen)
		}
	}
	return corrupt(path, off, ErrMemoryLimit, "frame needs %d MiB to decode (%s), over the reader's limit of %d MiB (offline tools: --max-memory)",
		(frameCost(h, msgs, data)+(1<<20)-1)>>20, what, limit>>20)
}

// growTo returns s emptied with room for n elements. A new array has room
// for twice n (so frames of varying sizes settle on one array, as append's
// growth did) up to MaxFrameMessages elements, a quarter more beyond (a
// frame of 4 M data blocks took 192 MB of block table with twice, where
// its accounted cost, blockCost a block, is 96 MB), but never more than
// most elements (nor fewer than n).
func growTo[E any](s []E, n, most int) []E {
	if cap(s) >= n {
		return s[:0]
	}
	extra := n
	if n > MaxFrameMessages {
		extra = n / 4
	}
	return make([]E, 0, max(n, min(n+extra, most)))
}
