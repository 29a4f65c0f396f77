package schema

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pbStep is one field on a path through protobuf wire bytes.
type pbStep struct {
	num    protowire.Number
	index  int // -1: singular (occurrences merge: the last value wins); else that element
	fd     protoreflect.FieldDescriptor
	kind   protoreflect.Kind // fd's, kept here off the interface
	packed bool              // a repeated scalar: may come packed
}

// pbValue is a scalar read from the wire.
type pbValue struct {
	kind Kind
	i    int64 // KindInt, KindEnum
	u    uint64
	f    float64
}

func (v pbValue) int64() (int64, bool) {
	switch v.kind {
	case KindInt, KindEnum:
		return v.i, true
	case KindUint, KindBool:
		return int64(v.u), v.u <= math.MaxInt64
	}
	return 0, false
}

// pbCompile resolves a path to wire steps; it returns the field the path
// ends at.
func pbCompile(md protoreflect.MessageDescriptor, elems []pathElem) ([]pbStep, protoreflect.FieldDescriptor, error) {
	var steps []pbStep
	var fd protoreflect.FieldDescriptor
	for i := 0; i < len(elems); i++ {
		e := elems[i]
		where := pathString(elems[:i])
		switch {
		case md == nil:
			return nil, nil, fmt.Errorf("%w: %q: %s is not a message", ErrNoField, pathString(elems), where)
		case e.isIndex:
			return nil, nil, fmt.Errorf("%w: %q: %s is not a repeated field", ErrNoField, pathString(elems), where)
		}
		if fd = md.Fields().ByName(protoreflect.Name(e.name)); fd == nil {
			return nil, nil, fmt.Errorf("%w: %q: %s has no field %s", ErrNoField, pathString(elems), md.FullName(), e.name)
		}
		if fd.IsMap() {
			return nil, nil, fmt.Errorf("%w: %q: map field %s: maps are not supported here", ErrNoField, pathString(elems), e.name)
		}
		st := newPBStep(fd)
		if fd.IsList() {
			if i+1 >= len(elems) || !elems[i+1].isIndex {
				return nil, nil, fmt.Errorf("%w: %q: %s is repeated; index it: %s[i]", ErrNoField, pathString(elems), e.name, e.name)
			}
			i++
			st.index = elems[i].index
		}
		if fd.Kind() == protoreflect.GroupKind {
			return nil, nil, fmt.Errorf("%w: %q: group %s: groups are not supported here", ErrNoField, pathString(elems), e.name)
		}
		steps = append(steps, st)
		md = fd.Message()
	}
	return steps, fd, nil
}

func newPBStep(fd protoreflect.FieldDescriptor) pbStep {
	k := fd.Kind()
	return pbStep{num: fd.Number(), index: -1, fd: fd, kind: k,
		packed: fd.IsList() && pbWireType(k) != protowire.BytesType && pbWireType(k) != protowire.StartGroupType}
}

// skipField returns the length of a field value of type typ, the common
// wire types inline.
func skipField(num protowire.Number, typ protowire.Type, b []byte) int {
	switch typ {
	case protowire.VarintType:
		for i := 0; i < len(b) && i < 10; i++ {
			if b[i] < 0x80 {
				return i + 1
			}
		}
		return -1
	case protowire.Fixed32Type:
		if len(b) < 4 {
			return -1
		}
		return 4
	case protowire.Fixed64Type:
		if len(b) < 8 {
			return -1
		}
		return 8
	case protowire.BytesType:
		_, n := protowire.ConsumeBytes(b)
		return n
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}

// pbLookup reads the value at steps from the wire bytes of a message,
// without decoding the rest. A missing scalar reads as its default; a
// missing message on the way, or malformed bytes, as false. It allocates
// nothing.
func pbLookup(b []byte, steps []pbStep, depth int) (pbValue, bool) {
	v, leaf, chain, ok := pbFind(b, steps, depth)
	if !ok || !chain {
		return pbValue{}, false
	}
	if !leaf {
		fd := steps[len(steps)-1].fd
		if fd.IsList() {
			return pbValue{}, false
		}
		return pbDefault(fd), true
	}
	return v, true
}

// pbFind returns the value, whether the leaf was present, whether every
// message on the way was, and false when the bytes are malformed.
func pbFind(b []byte, steps []pbStep, depth int) (v pbValue, leaf, chain, ok bool) {
	if depth > MaxDepth {
		return v, false, false, false
	}
	s := &steps[0]
	last := len(steps) == 1
	count := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return v, false, false, false
		}
		b = b[n:]
		if num != s.num {
			if n = skipField(num, typ, b); n < 0 {
				return v, false, false, false
			}
			b = b[n:]
			continue
		}
		if !last {
			if typ != protowire.BytesType {
				return v, false, false, false
			}
			sub, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return v, false, false, false
			}
			b = b[n:]
			if s.index >= 0 {
				if count++; count-1 == s.index {
					return pbFind(sub, steps[1:], depth+1)
				}
				continue
			}
			sv, sl, sc, sok := pbFind(sub, steps[1:], depth+1)
			if !sok {
				return v, false, false, false
			}
			chain = chain || sc
			if sl {
				v, leaf = sv, true
			}
			continue
		}
		if typ == protowire.BytesType && s.packed {
			packed, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return v, false, false, false
			}
			b = b[n:]
			for len(packed) > 0 {
				ev, n := pbScalar(s.kind, pbWireType(s.kind), packed)
				if n < 0 {
					return v, false, false, false
				}
				packed = packed[n:]
				if count++; count-1 == s.index {
					return ev, true, true, true
				}
			}
			continue
		}
		ev, n := pbScalar(s.kind, typ, b)
		if n < 0 {
			return v, false, false, false
		}
		b = b[n:]
		if s.index >= 0 {
			if count++; count-1 == s.index {
				return ev, true, true, true
			}
			continue
		}
		v, leaf = ev, true
	}
	return v, leaf, last || chain, true
}

func pbWireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// pbScalar decodes one scalar of kind k; n < 0 when the wire type does
// not match or the bytes end.
func pbScalar(k protoreflect.Kind, typ protowire.Type, b []byte) (pbValue, int) {
	if typ != pbWireType(k) || typ == protowire.BytesType || typ == protowire.StartGroupType {
		return pbValue{}, -1
	}
	var v pbValue
	v.kind = protoKind(k)
	switch typ {
	case protowire.VarintType:
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return v, n
		}
		switch k {
		case protoreflect.Int32Kind, protoreflect.EnumKind:
			v.i = int64(int32(x))
		case protoreflect.Int64Kind:
			v.i = int64(x)
		case protoreflect.Sint32Kind:
			v.i = int64(int32(protowire.DecodeZigZag(x & math.MaxUint32)))
		case protoreflect.Sint64Kind:
			v.i = protowire.DecodeZigZag(x)
		case protoreflect.Uint32Kind:
			v.u = uint64(uint32(x))
		case protoreflect.BoolKind:
			v.u = min(x, 1)
		default:
			v.u = x
		}
		return v, n
	case protowire.Fixed32Type:
		x, n := protowire.ConsumeFixed32(b)
		switch k {
		case protoreflect.FloatKind:
			v.f = float64(math.Float32frombits(x))
		case protoreflect.Sfixed32Kind:
			v.i = int64(int32(x))
		default:
			v.u = uint64(x)
		}
		return v, n
	}
	x, n := protowire.ConsumeFixed64(b)
	switch k {
	case protoreflect.DoubleKind:
		v.f = math.Float64frombits(x)
	case protoreflect.Sfixed64Kind:
		v.i = int64(x)
	default:
		v.u = x
	}
	return v, n
}

func pbDefault(fd protoreflect.FieldDescriptor) pbValue {
	d := fd.Default()
	v := pbValue{kind: protoKind(fd.Kind())}
	switch v.kind {
	case KindInt:
		v.i = d.Int()
	case KindEnum:
		v.i = int64(d.Enum())
	case KindUint:
		v.u = d.Uint()
	case KindBool:
		if d.Bool() {
			v.u = 1
		}
	case KindFloat:
		v.f = d.Float()
	}
	return v
}
