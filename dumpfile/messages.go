package dumpfile

import (
	"io"

	"github.com/edr-lite/edr-lite/internal/kway"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Messages reads the messages of several dumps, pack or MCAP, as one
// stream in message time order (ties keep the order of the sources, then
// each source's order), merging message by message: frames and chunks of
// different files may overlap in time, and a FreeSync frame spans a
// period. A pack source is read in file order (pack dumps are written in
// time order) and ordered by MessageTime; an MCAP source in log_time order
// whatever the order of the file (mcap.PackReader, see mcap.Cursor for what
// that costs). Steady state does not allocate.
//
// A Messages is not safe for concurrent use. It does not own the sources.
type Messages struct {
	its    []*msgIter
	h      *kway.Heap[*msgIter] // sources with a message, by (time, source, position)
	cur    *msgIter             // returned by the last Next; advanced by the next one
	from   int64
	seeked bool
	msg    Message
	// skip, when not nil, handles a source's read error (Iterator with
	// SkipDamaged): whether the source has a message again, or the error.
	skip func(it *msgIter, err error) (bool, error)
}

// NewMessages merges sources from their first message.
func NewMessages(sources ...*Source) *Messages {
	m := &Messages{}
	for i, s := range sources {
		m.its = append(m.its, &msgIter{r: s.pack, mp: s.mp, st: s.st, src: i, types: &s.types, dec: s.dec})
	}
	m.h = kway.New(lessMsgIter, len(m.its))
	return m
}

// SeekTime positions every reader at its first message with time >= fromNs
// (fromNs <= 0: from the start) and restarts the merge. Frames are skipped
// by their metas only; a frame is read with data only from the first frame
// holding a message at or after fromNs.
func (m *Messages) SeekTime(fromNs int64) error {
	m.from = fromNs
	m.seeked = true
	m.h.Reset()
	m.cur = nil
	for _, it := range m.its {
		it.n = 0
		it.pending, it.decoded = false, false
		switch {
		case it.st != nil:
			it.st.rewind() // next skips what is before fromNs
		case it.mp != nil:
			it.mp.SeekTime(fromNs)
		default:
			it.r.Rewind()
			it.f.Reset(0, 0)
			it.i = -1
			if err := it.skipTo(fromNs); err != nil && m.skip == nil {
				return err // (with skip, the read below meets the damage)
			}
		}
		ok, err := it.next(fromNs)
		if err != nil && m.skip != nil {
			ok, err = m.skip(it, err)
		}
		if err != nil {
			return err
		}
		if ok {
			m.h.Push(it)
		}
	}
	return nil
}

// Next moves to the next message and reports whether there is one. Without
// a SeekTime before, the merge starts at the first message. A damaged frame stops
// the merge with an error naming the file.
func (m *Messages) Next() (bool, error) {
	if !m.seeked {
		if err := m.SeekTime(0); err != nil {
			return false, err
		}
	}
	if it := m.cur; it != nil && len(m.its) == 1 && it.r != nil && it.mp == nil && it.st == nil && it.dec == nil && it.i+1 < it.f.Len() {
		// One pack source with messages left in its frame (replay of a
		// dump): the next one, without the merge's calls.
		it.i++
		if it.ts = MessageTime(it.f.MessageAt(it.i), it.f.Time()); m.from <= 0 || it.ts >= m.from {
			it.n++
			return true, nil
		}
		it.i-- // before the seek's time: the general path skips it
	}
	if m.cur != nil {
		ok, err := m.cur.next(m.from)
		if err != nil && m.skip != nil {
			ok, err = m.skip(m.cur, err)
		}
		if err != nil {
			m.cur = nil
			return false, err
		}
		if ok {
			m.h.FixTop()
		} else {
			m.h.Pop()
		}
	}
	if m.h.Len() == 0 {
		m.cur = nil
		return false, nil
	}
	m.cur = m.h.Top()
	return true, nil
}

// Message returns the current message. It and its bytes are valid until
// the next Next or SeekTime.
func (m *Messages) Message() *Message {
	if it := m.cur; it.decoded {
		m.msg = it.decMsg
	} else {
		it.message(&m.msg)
	}
	return &m.msg
}

// message fills m with the source's current message (not one --dbc
// decoded).
func (it *msgIter) message(m *Message) {
	if it.st != nil {
		*m = it.msg
	} else if it.mp != nil {
		mcapMessage(m, it.mp.Message())
	} else {
		packMessage(m, &it.f, it.i, it.types, it.off)
	}
}

// Time returns the current message's time (Message().TimeNs).
func (m *Messages) Time() int64 { return m.cur.ts }

// Source returns the index of the reader the current message came from.
func (m *Messages) Source() int { return m.cur.src }

// msgIter walks one source message by message.
type msgIter struct {
	r     *pack.Reader     // pack source
	mp    *mcap.PackReader // MCAP source
	st    stream           // camera file
	msg   Message          // st's current message
	types *typeOf          // the pack source's types
	src   int
	f     pack.Frame
	off   int64 // file offset of f
	i     int
	n     uint64 // messages returned so far, for stable ties
	ts    int64
	// dec decodes the source's CAN frame topics (--dbc): after a frame
	// its DBC decodes (pending), the decoded message (decoded), at the
	// frame's time.
	dec              *canDecoding
	pending, decoded bool
	decMsg           Message
	decBuf           []byte
}

// skipTo moves the reader to the first frame holding a message with time
// >= from (pack.Reader.SeekTime: the frames' metas are read once per
// reader, then each seek is a binary search).
func (it *msgIter) skipTo(from int64) error {
	if from <= 0 {
		return nil
	}
	return it.r.SeekTime(from)
}

// next moves to the next message with time >= from.
func (it *msgIter) next(from int64) (bool, error) {
	if it.dec == nil {
		return it.nextOwn(from)
	}
	if it.pending { // the message decoded from the frame before
		it.pending, it.decoded = false, true
		it.n++
		return true, nil
	}
	it.decoded = false
	ok, err := it.nextOwn(from)
	if ok {
		var m Message
		it.message(&m)
		it.pending = it.dec.decode(&m, &it.decBuf, &it.decMsg)
	}
	return ok, err
}

// nextOwn moves to the source's next message with time >= from.
func (it *msgIter) nextOwn(from int64) (bool, error) {
	if it.st != nil {
		for {
			ok, err := it.st.next(&it.msg)
			if err != nil || !ok {
				return false, err
			}
			if from > 0 && it.msg.TimeNs < from {
				continue
			}
			it.ts = it.msg.TimeNs
			it.n++
			return true, nil
		}
	}
	if it.mp != nil { // positioned by SeekTime
		ok, err := it.mp.Next()
		if ok {
			it.ts = it.mp.Message().DoneTs
			it.n++
		}
		return ok, err
	}
	for {
		it.i++
		for it.i >= it.f.Len() {
			if err := it.r.ReadInto(&it.f); err != nil {
				if err == io.EOF {
					return false, nil
				}
				return false, err
			}
			it.i, it.off = 0, it.r.FrameOffset()
		}
		it.ts = MessageTime(it.f.MessageAt(it.i), it.f.Time())
		if from > 0 && it.ts < from {
			continue
		}
		it.n++
		return true, nil
	}
}

// lessMsgIter orders sources by their current message's time, then by
// source index, then by how many messages each has returned: the merge is
// deterministic whatever the heap does with ties.
func lessMsgIter(a, b *msgIter) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.src != b.src {
		return a.src < b.src
	}
	return a.n < b.n
}
