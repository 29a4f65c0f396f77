package pack

import (
	"fmt"
	"strings"
)

// FrameType says how the messages of a frame relate in time
// (FrameV2Proto.FrameType).
type FrameType int32

const (
	// Bundle: all messages were emitted together and share the frame time.
	Bundle FrameType = 0
	// FreeSync: the frame is one period; messages carry their own times.
	FreeSync FrameType = 1
)

// String returns "Bundle", "FreeSync" or the number.
func (t FrameType) String() string {
	switch t {
	case Bundle:
		return "Bundle"
	case FreeSync:
		return "FreeSync"
	}
	return fmt.Sprintf("FrameType(%d)", int32(t))
}

// ProtoVersion is the proto_version written into every frame meta.
const ProtoVersion = 2

// NoData is the DataIndex of a message that has no data block.
const NoData = -1

// Message is one message of a frame (FrameV2Proto.Message). Meta is the
// message's serialized bytes; DataIndex names the frame's data block that
// belongs to it, or NoData.
//
// A Message obtained from a Frame aliases the frame's memory: see Frame.
type Message struct {
	Name      string
	Channel   string
	Meta      []byte
	GenTs     int64
	DoneTs    int64
	DataIndex int32
	// HasSeq says whether the message carries its producer's sequence
	// number Seq (FrameV2Proto.Message.seq; SetSeq): a file's messages
	// from another format that numbers them (MCAP). Zero: unknown.
	HasSeq bool
	Seq    uint64
}

// Topic returns "name#channel".
func (m *Message) Topic() string { return Topic(m.Name, m.Channel) }

// Topic joins a message name and a channel into a topic, "name#channel".
func Topic(name, channel string) string { return name + "#" + channel }

// SplitTopic splits "name#channel" at the last '#'. A topic without '#' is a
// name with an empty channel.
func SplitTopic(topic string) (name, channel string) {
	i := strings.LastIndexByte(topic, '#')
	if i < 0 {
		return topic, ""
	}
	return topic[:i], topic[i+1:]
}

// Block is one message of a topic with its data, as returned by Frame.Blocks.
type Block struct {
	GenTs  int64
	DoneTs int64
	Meta   []byte
	Data   []byte // nil when the message has no data
}

// Frame is one frame: a meta (id, type, times, messages) and the data blocks
// the messages point to. The zero Frame is empty and usable; NewFrame sets
// the id and time.
//
// Lifetimes: slices passed to AddMetaBorrowed are kept, not copied, until the
// frame is Reset or reused by a Reader. Slices a Reader puts into a Frame
// (Meta, data blocks) alias the reader's read-only mapping or the frame's
// own buffers and are valid until the next ReadInto/ReadMetaInto into this
// Frame or until the Reader is closed, whichever comes first; never modify
// them. Copy what must outlive that.
//
// A Frame is not safe for concurrent use.
type Frame struct {
	id           uint64
	timeNs       int64
	doneNs       int64
	version      string
	protoVersion int32
	typ          FrameType

	msgs   []Message
	blocks [][]byte

	own     []byte            // copies made by AddMeta/AddMetaWithData
	scratch []byte            // decompressed data (reader)
	names   map[string]string // interned names and channels (reader)

	recentNames [16]string // recent names interned, by length and bytes (reader)
	recentMiss  int        // names of this frame that matched none of them
	lastChan    string     // the last channel interned (reader)
}

// NewFrame returns an empty Bundle frame with the given id and time (ns
// since the UNIX epoch).
func NewFrame(id uint64, timeNs int64) *Frame {
	f := &Frame{}
	f.Reset(id, timeNs)
	return f
}

// Reset empties the frame, keeping its buffers, and sets id and time. Type
// becomes Bundle, done time 0, version "".
func (f *Frame) Reset(id uint64, timeNs int64) {
	f.id, f.timeNs, f.doneNs = id, timeNs, 0
	f.version, f.protoVersion, f.typ = "", ProtoVersion, Bundle
	clear(f.msgs) // drop references to borrowed memory
	f.msgs = f.msgs[:0]
	clear(f.blocks)
	f.blocks = f.blocks[:0]
	f.own = f.own[:0]
}

// ID returns the frame id.
func (f *Frame) ID() uint64 { return f.id }

// SetID sets the frame id.
func (f *Frame) SetID(id uint64) { f.id = id }

// Time returns the frame's main (start) time, ns since the UNIX epoch.
func (f *Frame) Time() int64 { return f.timeNs }

// SetTime sets the frame's main time.
func (f *Frame) SetTime(ns int64) { f.timeNs = ns }

// DoneTime returns the frame's end time (0 when unset).
func (f *Frame) DoneTime() int64 { return f.doneNs }

// SetDoneTime sets the frame's end time.
func (f *Frame) SetDoneTime(ns int64) { f.doneNs = ns }

// Type returns the frame type.
func (f *Frame) Type() FrameType { return f.typ }

// SetType sets the frame type.
func (f *Frame) SetType(t FrameType) { f.typ = t }

// Version returns the producing application's version string.
func (f *Frame) Version() string { return f.version }

// SetVersion sets the producing application's version string.
func (f *Frame) SetVersion(v string) { f.version = v }

// ProtoVersion returns the meta's proto_version (2 for frames made here).
func (f *Frame) ProtoVersion() int32 { return f.protoVersion }

// EndTime returns DoneTime when set, else Time: the end of the frame's span.
func (f *Frame) EndTime() int64 {
	if f.doneNs != 0 {
		return f.doneNs
	}
	return f.timeNs
}

// Len returns the number of messages.
func (f *Frame) Len() int { return len(f.msgs) }

// Message returns message i (0 <= i < Len). The returned value aliases the
// frame (see Frame).
func (f *Frame) Message(i int) Message { return f.msgs[i] }

// MessageAt returns message i in place, for readers that look at a few
// fields of every message without copying it: valid until the frame
// changes, and not to be modified.
func (f *Frame) MessageAt(i int) *Message { return &f.msgs[i] }

// Data returns the data block of message i, or nil when it has none.
func (f *Frame) Data(i int) []byte {
	di := f.msgs[i].DataIndex
	if di < 0 || int(di) >= len(f.blocks) {
		return nil
	}
	return f.blocks[di]
}

// NumBlocks returns the number of data blocks.
func (f *Frame) NumBlocks() int { return len(f.blocks) }

// Block returns data block i (0 <= i < NumBlocks).
func (f *Frame) Block(i int) []byte { return f.blocks[i] }

// DataSize returns the total length of the data blocks.
func (f *Frame) DataSize() int {
	n := 0
	for _, b := range f.blocks {
		n += len(b)
	}
	return n
}

func (f *Frame) copyOwn(b []byte) []byte {
	if b == nil {
		return nil
	}
	// Growing f.own may move it; slices handed out earlier keep pointing at
	// the old array, whose contents never change, so they stay valid.
	n := len(f.own)
	f.own = append(f.own, b...)
	if f.own == nil {
		return []byte{} // empty but present: a data block of 0 bytes
	}
	return f.own[n:len(f.own):len(f.own)]
}

// AddMeta adds a message without data; meta is copied.
func (f *Frame) AddMeta(name, channel string, meta []byte, genTs, doneTs int64) {
	f.msgs = append(f.msgs, Message{Name: name, Channel: channel, Meta: f.copyOwn(meta),
		GenTs: genTs, DoneTs: doneTs, DataIndex: NoData})
}

// AddMetaWithData adds a message with a data block; meta and data are
// copied, so the caller may reuse them at once. A nil data adds no block.
func (f *Frame) AddMetaWithData(name, channel string, meta []byte, genTs, doneTs int64, data []byte) {
	f.addBorrowed(name, channel, f.copyOwn(meta), genTs, doneTs, f.copyOwn(data))
}

// AddMetaBorrowed adds a message like AddMetaWithData but without copying:
// the frame keeps meta and data, which must stay unchanged until the frame
// has been written (WriteFrame returns) or Reset. A nil data adds no block.
func (f *Frame) AddMetaBorrowed(name, channel string, meta []byte, genTs, doneTs int64, data []byte) {
	f.addBorrowed(name, channel, meta, genTs, doneTs, data)
}

// SetSeq gives message i its producer's sequence number (Message.Seq).
func (f *Frame) SetSeq(i int, seq uint64) {
	f.msgs[i].Seq, f.msgs[i].HasSeq = seq, true
}

func (f *Frame) addBorrowed(name, channel string, meta []byte, genTs, doneTs int64, data []byte) {
	di := int32(NoData)
	if data != nil {
		di = int32(len(f.blocks))
		f.blocks = append(f.blocks, data)
	}
	f.msgs = append(f.msgs, Message{Name: name, Channel: channel, Meta: meta,
		GenTs: genTs, DoneTs: doneTs, DataIndex: di})
}

// Remove deletes every message named name (all channels) and the data
// blocks only they used. It returns how many messages were removed.
func (f *Frame) Remove(name string) int {
	return f.removeIf(func(m *Message) bool { return m.Name == name })
}

// RemoveChannel deletes the messages of topic name#channel and the data
// blocks only they used. It returns how many messages were removed.
func (f *Frame) RemoveChannel(name, channel string) int {
	return f.removeIf(func(m *Message) bool { return m.Name == name && m.Channel == channel })
}

func (f *Frame) removeIf(drop func(*Message) bool) int {
	kept := f.msgs[:0]
	removed := 0
	for i := range f.msgs {
		if drop(&f.msgs[i]) {
			removed++
			continue
		}
		kept = append(kept, f.msgs[i])
	}
	clear(f.msgs[len(kept):])
	f.msgs = kept
	if removed == 0 {
		return 0
	}
	// Renumber the blocks still referenced, in their old order.
	newIdx := make([]int32, len(f.blocks))
	for i := range newIdx {
		newIdx[i] = NoData
	}
	for _, m := range f.msgs {
		if m.DataIndex >= 0 && int(m.DataIndex) < len(f.blocks) {
			newIdx[m.DataIndex] = 0
		}
	}
	nb := f.blocks[:0]
	for i, b := range f.blocks {
		if newIdx[i] == 0 {
			newIdx[i] = int32(len(nb))
			nb = append(nb, b)
		}
	}
	clear(f.blocks[len(nb):])
	f.blocks = nb
	for i := range f.msgs {
		if di := f.msgs[i].DataIndex; di >= 0 && int(di) < len(newIdx) {
			f.msgs[i].DataIndex = newIdx[di]
		}
	}
	return removed
}

// dropBefore removes the messages whose MessageTime is before from,
// keeping the data blocks (the others' DataIndex stay valid).
func (f *Frame) dropBefore(from int64) {
	i := 0 // the messages before the first dropped stay where they are
	for i < len(f.msgs) && MessageTime(&f.msgs[i], f.timeNs) >= from {
		i++
	}
	if i == len(f.msgs) {
		return // every frame after a seek's first: nothing moves
	}
	kept := f.msgs[:i]
	for i++; i < len(f.msgs); i++ {
		if MessageTime(&f.msgs[i], f.timeNs) >= from {
			kept = append(kept, f.msgs[i])
		}
	}
	clear(f.msgs[len(kept):])
	f.msgs = kept
}

// Topics returns the frame's topics ("name#channel") in order of first
// appearance.
func (f *Frame) Topics() []string {
	var out []string
	seen := map[string]bool{}
	for i := range f.msgs {
		t := f.msgs[i].Topic()
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Channels returns the channels of messages named name, in order of first
// appearance.
func (f *Frame) Channels(name string) []string {
	var out []string
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.Name == name && !contains(out, m.Channel) {
			out = append(out, m.Channel)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// BlockCount returns how many messages of topic name#channel the frame holds.
func (f *Frame) BlockCount(name, channel string) int {
	n := 0
	for i := range f.msgs {
		if f.msgs[i].Name == name && f.msgs[i].Channel == channel {
			n++
		}
	}
	return n
}

// Blocks returns the messages of topic name#channel with their data, in
// frame order. The slices alias the frame (see Frame).
func (f *Frame) Blocks(name, channel string) []Block {
	var out []Block
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.Name == name && m.Channel == channel {
			out = append(out, Block{GenTs: m.GenTs, DoneTs: m.DoneTs, Meta: m.Meta, Data: f.Data(i)})
		}
	}
	return out
}

// Parts returns the frame as a two-dimensional byte array: the encoded meta
// followed by the data blocks in order. The meta is freshly encoded; the
// blocks alias the frame.
func (f *Frame) Parts() [][]byte {
	out := make([][]byte, 0, 1+len(f.blocks))
	out = append(out, f.AppendMeta(nil))
	return append(out, f.blocks...)
}

// FrameFromParts builds a frame from Parts' layout: parts[0] is an encoded
// meta, parts[1:] the data blocks. The frame aliases parts. It fails if the
// meta does not decode or names a data block that is not there.
func FrameFromParts(parts [][]byte) (*Frame, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no meta part", ErrBadMeta)
	}
	f := &Frame{}
	if err := f.UnmarshalMeta(parts[0]); err != nil {
		return nil, err
	}
	f.blocks = append(f.blocks, parts[1:]...)
	if err := f.checkDataIndexes(); err != nil {
		return nil, err
	}
	return f, nil
}

// errDataIndex is returned (not allocated per call) when a message names a
// missing block.
var errDataIndex = fmt.Errorf("%w: data_index out of range", ErrBadMeta)

func (f *Frame) checkDataIndexes() error {
	for i := range f.msgs {
		if di := f.msgs[i].DataIndex; di < NoData || int(di) >= len(f.blocks) {
			return errDataIndex
		}
	}
	return nil
}
