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
	f.protoVersion = 0
	if err := f.unmarshalMeta(b); err != nil {
		f.Reset(0, 0)
		return err
	}
	return nil
}

func (f *Frame) unmarshalMeta(b []byte) error {
	for len(b) > 0 {
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
	return nil
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
