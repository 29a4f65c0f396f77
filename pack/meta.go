package pack

import (
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
	f.Reset(0, 0)
	f.recentMiss = 0
	f.protoVersion = 0
	if err := f.unmarshalMeta(b); err != nil {
		f.Reset(0, 0)
		return err
	}
	return nil
}

func (f *Frame) unmarshalMeta(b []byte) error {
	for len(b) > 0 {
		if b[0] == fieldFrameDataList<<3|2 { // a message: the common case, inline
			l, n := uvarint(b[1:])
			if n < 0 || l > uint64(len(b)-1-n) {
				return errMeta
			}
			f.msgs = append(f.msgs, Message{DataIndex: NoData})
			if err := f.unmarshalMessage(&f.msgs[len(f.msgs)-1], b[1+n:1+n+int(l)]); err != nil {
				return err
			}
			b = b[1+n+int(l):]
			continue
		}
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
			f.msgs = append(f.msgs, Message{DataIndex: NoData})
			if err := f.unmarshalMessage(&f.msgs[len(f.msgs)-1], v); err != nil {
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
		case fieldMsgGenTs<<3 | 0, fieldMsgDoneTs<<3 | 0, fieldMsgDataIndex<<3 | 0:
			tag := b[0]
			v, n := uvarint(b[1:])
			if n < 0 {
				return errMeta
			}
			switch tag >> 3 {
			case fieldMsgGenTs:
				m.GenTs = int64(v)
			case fieldMsgDoneTs:
				m.DoneTs = int64(v)
			default:
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
			case typ == protowire.VarintType && (num == fieldMsgGenTs || num == fieldMsgDoneTs || num == fieldMsgDataIndex):
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
	if len(b) >= 9 && b[8] < 0x80 && b[2]&b[3]&b[4]&b[5]&b[6]&b[7]&0x80 != 0 {
		// A nanosecond timestamp: nine bytes, the first eight continued.
		x := le.Uint64(b)
		v := x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
			x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
		return v | uint64(b[8])<<56, 9
	}
	return protowire.ConsumeVarint(b)
}

// internName and internChannel return v as a string, first comparing it
// with the last few names (the previous channel): the messages of a frame
// mostly cycle through a few topics, and comparing short strings costs less
// than a map lookup. A frame of many topics (recentMissMax names that
// matched none) goes straight to the map.
func (f *Frame) internName(v []byte) string {
	if f.recentMiss < recentMissMax {
		for i := range f.recentNames {
			if s := f.recentNames[i]; len(s) == len(v) && s == string(v) {
				return s
			}
		}
		f.recentMiss++
	}
	s := f.intern(v)
	f.recentNames[f.recentNext%len(f.recentNames)] = s
	f.recentNext++
	return s
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
