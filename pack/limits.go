// Memory limits of the readers: what decoding one frame may cost, checked
// against what the frame really holds before anything is allocated.

package pack

import (
	"errors"
	"fmt"
	"math"

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

// messagesWithin is the most messages a frame with header h decodes into
// within limit: frameCost(h, n, data) <= limit for every n up to it (-1
// when not even an empty meta fits).
func messagesWithin(h *frameHeader, data bool, limit int64) int {
	rest := limit - frameCost(h, 0, data)
	if rest < 0 {
		return -1
	}
	return int(min(rest/messageCost, math.MaxInt32))
}

// errTooMany: the meta holds more messages than the decoder was allowed
// (unmarshalMetaAtMost). The reader allows at least as many as the meta
// can hold, so it never meets it.
var errTooMany = fmt.Errorf("%w: more messages than the memory limit allows", ErrBadMeta)

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

// MaxTargetFrameSize is the largest data size a frame made by a writer
// that closes frames at a target size (Writer.Add, the recorder's dumps)
// may be set to grow to: half of DefaultMaxMemory, so that its last
// message (up to the rest) still fits the limit every frame keeps. Add
// closes its frame there whatever WriterOptions.TargetFrameSize says.
const MaxTargetFrameSize = DefaultMaxMemory / 2

// writeLimit is the memory limit every frame a Writer writes keeps: the
// readers' default (DefaultMaxMemory), so that every reader with default
// options reads every frame a Writer makes. A variable for the tests only.
var writeLimit int64 = DefaultMaxMemory

// frameNeeds is what reading the frame with header h (record length rec)
// and msgs messages takes at most of a reader's memory limit: a
// StreamReader holds the whole record, and decoding costs frameCost (a
// Reader maps the record and pays the decoding only).
func frameNeeds(h *frameHeader, rec int64, msgs int) int64 {
	return max(rec, frameCost(h, msgs, true))
}

// tooLargeError is the writer's refusal of a frame that a reader with the
// default memory limit would refuse.
func tooLargeError(h *frameHeader, rec int64, msgs int) error {
	comp := ""
	if h.codec != CompressNone {
		comp = fmt.Sprintf(" (%d decompressed)", h.rawLen)
	}
	return fmt.Errorf("%w: a frame of %d messages, %d data blocks and %d bytes of data%s needs %d MiB to read, over the %d MiB every reader takes by default (pack.DefaultMaxMemory): write it as smaller frames",
		ErrFrameTooLarge, msgs, h.nblocks, h.stored, comp, (frameNeeds(h, rec, msgs)+(1<<20)-1)>>20, writeLimit>>20)
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
