package pack

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of frame.v2.proto.
const (
	fieldFrameVersion      = 1
	fieldFrameID           = 2
	fieldFrameTime         = 3
	fieldFrameProtoVersion = 4
	fieldFrameDataList     = 5
	fieldFrameType         = 6
	fieldFrameDoneTime     = 7

	fieldMsgName      = 1
	fieldMsgMeta      = 2
	fieldMsgGenTs     = 3
	fieldMsgDoneTs    = 4
	fieldMsgChannel   = 5
	fieldMsgDataIndex = 6
	fieldMsgSeq       = 7 // added to 1.1 (FORMAT.md)
)

// maxInterned bounds the per-Frame table of interned names and channels.
// Past it, decoding allocates a string per name (hostile or huge topic sets
// cannot grow the table without bound).
const maxInterned = 4096

func sizeVarintField(v uint64) int { return 1 + protowire.SizeVarint(v) }
func sizeBytesField(n int) int     { return 1 + protowire.SizeBytes(n) }

func (m *Message) metaSize() int {
	n := 0
	if m.Name != "" {
		n += sizeBytesField(len(m.Name))
	}
	if len(m.Meta) > 0 {
		n += sizeBytesField(len(m.Meta))
	}
	if m.GenTs != 0 {
		n += sizeVarintField(uint64(m.GenTs))
	}
	if m.DoneTs != 0 {
		n += sizeVarintField(uint64(m.DoneTs))
	}
	if m.Channel != "" {
		n += sizeBytesField(len(m.Channel))
	}
	if m.DataIndex != NoData {
		n += sizeVarintField(uint64(int64(m.DataIndex)))
	}
	if m.HasSeq {
		n += sizeVarintField(m.Seq)
	}
	return n
}

// AppendMeta appends the frame's meta, the protobuf wire encoding of
// FrameV2Proto.Frame (frame.v2.proto), to dst and returns the extended
// slice. Fields holding their default value are omitted. It does not
// allocate when dst has room.
func (f *Frame) AppendMeta(dst []byte) []byte {
	if f.version != "" {
		dst = protowire.AppendTag(dst, fieldFrameVersion, protowire.BytesType)
		dst = protowire.AppendString(dst, f.version)
	}
	if f.id != 0 {
		dst = protowire.AppendTag(dst, fieldFrameID, protowire.VarintType)
		dst = protowire.AppendVarint(dst, f.id)
	}
	if f.timeNs != 0 {
		dst = protowire.AppendTag(dst, fieldFrameTime, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(f.timeNs))
	}
	if f.protoVersion != 0 {
		dst = protowire.AppendTag(dst, fieldFrameProtoVersion, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(int64(f.protoVersion)))
	}
	for i := range f.msgs {
		m := &f.msgs[i]
		dst = protowire.AppendTag(dst, fieldFrameDataList, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(m.metaSize()))
		if m.Name != "" {
			dst = protowire.AppendTag(dst, fieldMsgName, protowire.BytesType)
			dst = protowire.AppendString(dst, m.Name)
		}
		if len(m.Meta) > 0 {
			dst = protowire.AppendTag(dst, fieldMsgMeta, protowire.BytesType)
			dst = protowire.AppendBytes(dst, m.Meta)
		}
		if m.GenTs != 0 {
			dst = protowire.AppendTag(dst, fieldMsgGenTs, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(m.GenTs))
		}
		if m.DoneTs != 0 {
			dst = protowire.AppendTag(dst, fieldMsgDoneTs, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(m.DoneTs))
		}
		if m.Channel != "" {
			dst = protowire.AppendTag(dst, fieldMsgChannel, protowire.BytesType)
			dst = protowire.AppendString(dst, m.Channel)
		}
		if m.DataIndex != NoData {
			dst = protowire.AppendTag(dst, fieldMsgDataIndex, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(int64(m.DataIndex)))
		}
		if m.HasSeq {
			dst = protowire.AppendTag(dst, fieldMsgSeq, protowire.VarintType)
			dst = protowire.AppendVarint(dst, m.Seq)
		}
	}
	if f.typ != Bundle {
		dst = protowire.AppendTag(dst, fieldFrameType, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(int64(f.typ)))
	}
	if f.doneNs != 0 {
		dst = protowire.AppendTag(dst, fieldFrameDoneTime, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(f.doneNs))
	}
	return dst
}

// MetaSize returns len(f.AppendMeta(nil)) without encoding.
func (f *Frame) MetaSize() int {
	n := 0
	if f.version != "" {
		n += sizeBytesField(len(f.version))
	}
	if f.id != 0 {
		n += sizeVarintField(f.id)
	}
	if f.timeNs != 0 {
		n += sizeVarintField(uint64(f.timeNs))
	}
	if f.protoVersion != 0 {
		n += sizeVarintField(uint64(int64(f.protoVersion)))
	}
	for i := range f.msgs {
		n += sizeBytesField(f.msgs[i].metaSize())
	}
	if f.typ != Bundle {
		n += sizeVarintField(uint64(int64(f.typ)))
	}
	if f.doneNs != 0 {
		n += sizeVarintField(uint64(f.doneNs))
	}
	return n
}

// errMeta is the one error value UnmarshalMeta returns for malformed wire
// data; decoding never allocates an error.
var errMeta = ErrBadMeta

// UnmarshalMeta replaces the frame's meta (id, type, times, version,
// messages) with the decoding of b, a FrameV2Proto.Frame in protobuf wire
// format. Data blocks are left empty. Message Meta slices alias b; names and
// channels are interned per Frame, so decoding a stream of frames with the
// same topics does not allocate in steady state. Unknown fields are skipped,
// as protobuf does. On error the frame is left empty.
func (f *Frame) UnmarshalMeta(b []byte) error {
	return f.unmarshalMetaAtMost(b, math.MaxInt)
}

// unmarshalMetaAtMost is UnmarshalMeta decoding at most most messages: a
// meta holding more leaves the frame empty and returns errTooMany, having
// allocated no more than most messages' room.
func (f *Frame) unmarshalMetaAtMost(b []byte, most int) error {
	// The messages are each overwritten as they are decoded: only those
	// past the new count are cleared (Reset's promise, no stale
	// references), instead of clearing all of them first, a second pass
	// over every message of the frame.
	stale := len(f.msgs)
	f.msgs = f.msgs[:0]
	f.Reset(0, 0)
	f.recentMiss = 0
	f.protoVersion = 0
	if err := f.unmarshalMeta(b, most); err != nil {
		f.msgs = f.msgs[:max(len(f.msgs), min(stale, cap(f.msgs)))]
		f.Reset(0, 0)
		return err
	}
	if n := len(f.msgs); n < stale && stale <= cap(f.msgs) {
		clear(f.msgs[n:stale])
	}
	return nil
}

// newMessage appends an empty message (no data block) to f and returns it,
// or nil when f would hold more than most messages. rest is the meta from
// this message on: when the array is full, the messages left are counted
// (once per frame larger than the last, so steady state does not count)
// and the new array has room for them, twice as many as growTo gives,
// never more than most.
func (f *Frame) newMessage(most int, rest []byte) *Message {
	n := len(f.msgs)
	if n >= most {
		return nil
	}
	if n == cap(f.msgs) {
		left, ok := countMessages(rest)
		if !ok {
			left = 1 // the decoding stops at the damage
		}
		if left > most-n {
			return nil
		}
		s := growTo([]Message(nil), n+left, most)
		f.msgs = append(s, f.msgs...)
	}
	f.msgs = f.msgs[:n+1]
	m := &f.msgs[n]
	*m = Message{DataIndex: NoData}
	return m
}

func (f *Frame) unmarshalMeta(b []byte, most int) error {
	for len(b) > 0 {
		if b[0] == fieldFrameDataList<<3|2 { // a message: the common case, inline
			l, n := uint64(0), 1
			if len(b) > 1 && b[1] < 0x80 {
				l = uint64(b[1])
			} else if l, n = uvarint(b[1:]); n < 0 {
				return errMeta
			}
			if l > uint64(len(b)-1-n) {
				return errMeta
			}
			var m *Message
			if k := len(f.msgs); k < cap(f.msgs) && k < most {
				f.msgs = f.msgs[:k+1]
				m = &f.msgs[k]
				*m = Message{DataIndex: NoData}
			} else if m = f.newMessage(most, b); m == nil {
				return errTooMany
			}
			if err := f.unmarshalMessage(m, b[1+n:1+n+int(l)]); err != nil {
				return err
			}
			b = b[1+n+int(l):]
			continue
		}
		rest := b
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMeta
		}
		b = b[n:]
		switch {
		case num == fieldFrameVersion && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMeta
			}
			f.version = f.intern(v)
			b = b[n:]
		case num == fieldFrameDataList && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMeta
			}
			m := f.newMessage(most, rest)
			if m == nil {
				return errTooMany
			}
			if err := f.unmarshalMessage(m, v); err != nil {
				return err
			}
			b = b[n:]
		case typ == protowire.VarintType && num >= fieldFrameID && num <= fieldFrameDoneTime:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errMeta
			}
			switch num {
			case fieldFrameID:
				f.id = v
			case fieldFrameTime:
				f.timeNs = int64(v)
			case fieldFrameProtoVersion:
				f.protoVersion = int32(v)
			case fieldFrameType:
				f.typ = FrameType(int32(v))
			case fieldFrameDoneTime:
				f.doneNs = int64(v)
			}
			// field 5 with varint type is unknown: value consumed, ignored.
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errMeta
			}
			b = b[n:]
		}
	}
	return nil
}

func (f *Frame) unmarshalMessage(m *Message, b []byte) error {
	// The writer's layout (AppendMeta) first: a short name, then both
	// times as nanosecond timestamps (nine bytes each, the first eight
	// continued), each checked with one mask and decoded from one load.
	// Whatever does not match, and what follows, takes the loop below,
	// which decodes any field order.
	if len(b) > 1 && b[0] == fieldMsgName<<3|2 && b[1] < 0x80 && int(b[1]) <= len(b)-2 {
		l := 2 + int(b[1])
		m.Name = f.internName(b[2:l:l])
		b = b[l:]
	}
	if len(b) >= 20 && b[0] == fieldMsgGenTs<<3 && b[10] == fieldMsgDoneTs<<3 && b[9]|b[19] < 0x80 {
		if x, y := le.Uint64(b[1:]), le.Uint64(b[11:]); x&y&continued8 == continued8 {
			m.GenTs = int64(compact8(x) | uint64(b[9])<<56)
			m.DoneTs = int64(compact8(y) | uint64(b[19])<<56)
			b = b[20:]
		}
	}
	switch { // the data index last, one or two bytes
	case len(b) == 2 && b[0] == fieldMsgDataIndex<<3 && b[1] < 0x80:
		m.DataIndex = int32(b[1])
		return nil
	case len(b) == 3 && b[0] == fieldMsgDataIndex<<3 && b[1] >= 0x80 && b[2] < 0x80:
		m.DataIndex = int32(b[1]&0x7f) | int32(b[2])<<7
		return nil
	}
	for len(b) > 0 {
		// Every field of Message has a one-byte tag; anything else (an
		// unknown field, a longer tag encoding) takes the general path.
		switch b[0] {
		case fieldMsgName<<3 | 2, fieldMsgMeta<<3 | 2, fieldMsgChannel<<3 | 2:
			tag := b[0]
			l, n := uvarint(b[1:])
			if n < 0 || l > uint64(len(b)-1-n) {
				return errMeta
			}
			v := b[1+n : 1+n+int(l) : 1+n+int(l)]
			switch tag >> 3 {
			case fieldMsgName:
				m.Name = f.internName(v)
			case fieldMsgMeta:
				m.Meta = v
			default:
				m.Channel = f.internChannel(v)
			}
			b = b[1+n+int(l):]
		case fieldMsgGenTs << 3, fieldMsgDoneTs << 3:
			// A nanosecond timestamp is nine bytes, the first eight
			// continued: checked with one mask, decoded from one load.
			v, n := uint64(0), 9
			if len(b) >= 10 && b[9] < 0x80 && le.Uint64(b[1:])&continued8 == continued8 {
				v = compact8(le.Uint64(b[1:])) | uint64(b[9])<<56
			} else if v, n = uvarint(b[1:]); n < 0 {
				return errMeta
			}
			if b[0] == fieldMsgGenTs<<3 {
				m.GenTs = int64(v)
			} else {
				m.DoneTs = int64(v)
			}
			b = b[1+n:]
		case fieldMsgDataIndex << 3, fieldMsgSeq << 3: // wire type 0, a varint
			tag := b[0]
			v, n := uvarint(b[1:])
			if n < 0 {
				return errMeta
			}
			if tag>>3 == fieldMsgSeq {
				m.Seq, m.HasSeq = v, true
			} else {
				m.DataIndex = int32(v)
			}
			b = b[1+n:]
		default:
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return errMeta
			}
			b = b[n:]
			switch {
			case typ == protowire.BytesType && (num == fieldMsgName || num == fieldMsgMeta || num == fieldMsgChannel):
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return errMeta
				}
				switch num {
				case fieldMsgName:
					m.Name = f.intern(v)
				case fieldMsgMeta:
					m.Meta = v[:len(v):len(v)]
				case fieldMsgChannel:
					m.Channel = f.intern(v)
				}
				b = b[n:]
			case typ == protowire.VarintType && (num == fieldMsgGenTs || num == fieldMsgDoneTs || num == fieldMsgDataIndex || num == fieldMsgSeq):
				v, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return errMeta
				}
				switch num {
				case fieldMsgGenTs:
					m.GenTs = int64(v)
				case fieldMsgDoneTs:
					m.DoneTs = int64(v)
				case fieldMsgDataIndex:
					m.DataIndex = int32(v)
				case fieldMsgSeq:
					m.Seq, m.HasSeq = v, true
				}
				b = b[n:]
			default:
				n := protowire.ConsumeFieldValue(num, typ, b)
				if n < 0 {
					return errMeta
				}
				b = b[n:]
			}
		}
	}
	return nil
}

const recentMissMax = 8

// uvarint decodes a protobuf varint at the start of b: the value and its
// length, or n < 0 when b holds no valid varint (protowire's rules). One-
// and two-byte values, the lengths and small indexes of a meta, are decoded
// inline.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return uvarintLong(b)
}

func uvarintLong(b []byte) (uint64, int) {
	if len(b) > 1 && b[1] < 0x80 {
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	if len(b) >= 9 && b[8] < 0x80 {
		// A nanosecond timestamp: nine bytes, the first eight continued.
		if x := le.Uint64(b); x&continued8 == continued8 {
			return compact8(x) | uint64(b[8])<<56, 9
		}
	}
	return protowire.ConsumeVarint(b)
}

// continued8 is the continuation bits of eight varint bytes read as one
// little-endian word.
const continued8 = 0x8080808080808080

// compact8 returns the 56 bits of payload of eight varint bytes read as one
// little-endian word (their continuation bits ignored): seven bits a byte,
// packed in three steps, pairs, quads, halves, instead of eight shifts.
func compact8(x uint64) uint64 {
	x &^= continued8
	x = x&0x007f007f007f007f | x>>1&0x3f803f803f803f80
	x = x&0x00003fff00003fff | x>>2&0x0fffc0000fffc000
	return x&0x000000000fffffff | x>>4&0x00fffffff0000000
}

// internName and internChannel return v as a string, first comparing it
// with a recent name of the same length and last and middle bytes (a
// direct-mapped table of recentNames slots; the previous channel): the
// messages of a frame mostly cycle through a few topics, and comparing
// short strings costs less than a map lookup. A frame of many topics
// (recentMissMax names that matched none) goes straight to the map.
func (f *Frame) internName(v []byte) string {
	if f.recentMiss < recentMissMax {
		slot := uint(0)
		if n := len(v); n > 0 {
			slot = (uint(v[n-1]) ^ uint(v[n/2])<<1 ^ uint(n)<<2) % uint(len(f.recentNames))
		}
		if s := f.recentNames[slot]; len(s) == len(v) && s == string(v) {
			return s
		}
		f.recentMiss++
		s := f.intern(v)
		f.recentNames[slot] = s
		return s
	}
	return f.intern(v)
}

func (f *Frame) internChannel(v []byte) string {
	if string(v) == f.lastChan {
		return f.lastChan
	}
	f.lastChan = f.intern(v)
	return f.lastChan
}

// intern returns b as a string, reusing an earlier identical string of this
// frame so that steady-state decoding does not allocate.
func (f *Frame) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := f.names[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if f.names == nil {
		f.names = make(map[string]string)
	}
	if len(f.names) < maxInterned {
		f.names[s] = s
	}
	return s
}

// MessageTime is the time a message is ordered and sought by (SeekTime,
// edr-lite's offline verbs): its capture time (done_ts), else its producer
// time (gen_ts), else the frame time frameNs.
func MessageTime(m *Message, frameNs int64) int64 {
	switch {
	case m.DoneTs != 0:
		return m.DoneTs
	case m.GenTs != 0:
		return m.GenTs
	}
	return frameNs
}

// latestMessageTime returns the latest MessageTime of the messages of an
// encoded frame meta without decoding it (math.MinInt64 when it holds
// none); ok is false when the meta does not parse.
func latestMessageTime(b []byte) (latest int64, ok bool) {
	latest = math.MinInt64
	var frameNs int64
	untimed := false
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return 0, false
		}
		b = b[k:]
		switch {
		case num == fieldFrameTime && typ == protowire.VarintType:
			v, k := protowire.ConsumeVarint(b)
			if k < 0 {
				return 0, false
			}
			frameNs, b = int64(v), b[k:]
			continue
		case num == fieldFrameDataList && typ == protowire.BytesType:
			m, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return 0, false
			}
			b = b[k:]
			var gen, done int64
			for len(m) > 0 {
				mnum, mtyp, j := protowire.ConsumeTag(m)
				if j < 0 {
					return 0, false
				}
				m = m[j:]
				if (mnum == fieldMsgGenTs || mnum == fieldMsgDoneTs) && mtyp == protowire.VarintType {
					v, j := protowire.ConsumeVarint(m)
					if j < 0 {
						return 0, false
					}
					if mnum == fieldMsgGenTs {
						gen = int64(v)
					} else {
						done = int64(v)
					}
					m = m[j:]
					continue
				}
				j = protowire.ConsumeFieldValue(mnum, mtyp, m)
				if j < 0 {
					return 0, false
				}
				m = m[j:]
			}
			switch {
			case done != 0:
				latest = max(latest, done)
			case gen != 0:
				latest = max(latest, gen)
			default:
				untimed = true
			}
			continue
		}
		k = protowire.ConsumeFieldValue(num, typ, b)
		if k < 0 {
			return 0, false
		}
		b = b[k:]
	}
	if untimed {
		latest = max(latest, frameNs)
	}
	return latest, true
}
