package schema

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// Accessor reads one leaf field of a packed message, by a path compiled to
// an offset once (Layout.Accessor). Float64, Int64, Uint64 and Bytes
// allocate nothing and never panic: a message too short for the field
// reads as false.
//
// A field after a length-prefixed string has no fixed offset: the Accessor
// keeps the plan to reach it (fixed bytes, then the strings to skip) and
// walks it on every read, reading one length prefix per string before the
// field; fixed-size arrays and structs on the way are skipped in one step.
//
// An Accessor is immutable and safe for concurrent use.
type Accessor struct {
	field Field
	off   int    // offset of the value, after the plan
	plan  []step // nil when the offset is fixed
	kind  nodeKind
	prim  prim
	big   bool
	size  int   // scalar size; char length
	code  uint8 // the common scalars, for Float64's switch
}

// Accessor.code values: the common scalar types in one byte.
const (
	codeOther uint8 = iota
	codeU8
	codeI8
	codeU16LE
	codeI16LE
	codeU32LE
	codeI32LE
	codeU64LE
	codeI64LE
	codeF32LE
	codeF64LE
	codeF32BE
	codeF64BE
)

var codeOf = map[string]uint8{"u8": codeU8, "i8": codeI8, "u16le": codeU16LE, "i16le": codeI16LE, "u32le": codeU32LE,
	"i32le": codeI32LE, "u64le": codeU64LE, "i64le": codeI64LE, "f32le": codeF32LE, "f64le": codeF64LE,
	"f32be": codeF32BE, "f64be": codeF64BE}

// step: skip fixed bytes, then count instances of a variable-size node.
type step struct {
	skip  int
	nd    *node
	count int
}

// Accessor compiles a field path ("speed", "wheel[2]", "p.x"; see
// docs/schemas.md, "Field paths") to an Accessor. The path must name a
// leaf: a scalar, char, string or bytes field (not a struct, a whole array
// or pad). Errors wrap ErrNoField.
func (l *Layout) Accessor(path string) (*Accessor, error) {
	elems, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	cur := &node{kind: nStruct, st: l.root}
	a := &Accessor{}
	var plan []step
	acc, unit := 0, ""
	for i, e := range elems {
		where := func() string { return pathString(elems[:i]) }
		switch cur.kind {
		case nStruct:
			if e.isIndex {
				return nil, fmt.Errorf("%w: %q: %s is a struct, not an array", ErrNoField, path, where())
			}
			var m *member
			for j := range cur.st.members {
				mj := &cur.st.members[j]
				if mj.name == e.name && mj.node.kind != nPad {
					m = mj
					break
				}
				if mj.node.fixed {
					acc += mj.node.size
				} else {
					plan = append(plan, step{skip: acc, nd: mj.node, count: 1})
					acc = 0
				}
			}
			if m == nil {
				return nil, fmt.Errorf("%w: %q: no field %s in %s", ErrNoField, path, e.name, structDesc(cur.st, where()))
			}
			cur, unit = m.node, m.unit
		case nArray:
			if !e.isIndex {
				return nil, fmt.Errorf("%w: %q: %s is an array; index it: %s[i]", ErrNoField, path, where(), where())
			}
			if e.index >= cur.n {
				return nil, fmt.Errorf("%w: %q: index %d out of range: %s has %d elements", ErrNoField, path, e.index, where(), cur.n)
			}
			if cur.elem.fixed {
				acc += e.index * cur.elem.size
			} else if e.index > 0 {
				plan = append(plan, step{skip: acc, nd: cur.elem, count: e.index})
				acc = 0
			}
			cur = cur.elem
		default:
			return nil, fmt.Errorf("%w: %q: %s is a %s, it has no fields", ErrNoField, path, where(), cur.typ)
		}
	}
	switch cur.kind {
	case nStruct:
		return nil, fmt.Errorf("%w: %q is a struct %s; name one of its fields", ErrNoField, path, cur.st.name)
	case nArray:
		return nil, fmt.Errorf("%w: %q is an array of %d; index it: %s[i]", ErrNoField, path, cur.n, path)
	}
	a.off, a.plan, a.kind, a.prim, a.big = acc, plan, cur.kind, cur.prim, cur.big
	a.size = cur.size
	if cur.kind == nScalar {
		a.code = codeOf[cur.typ]
	}
	if cur.kind == nChar {
		a.size = cur.n
	}
	fs := buildNodeFields(nil, cur, []byte(pathString(elems)), nil, unit)
	a.field = fs[0]
	return a, nil
}

func structDesc(st *structType, where string) string {
	switch {
	case where == "":
		return "the message"
	case st.name != "":
		return fmt.Sprintf("%s (struct %s)", where, st.name)
	}
	return where
}

// pathString formats parsed path elements back into a canonical path.
func pathString(elems []pathElem) string {
	var b []byte
	for _, e := range elems {
		if e.isIndex {
			b = appendPathIndex(b, e.index)
		} else {
			b = appendPathKey(b, e.name)
		}
	}
	return string(b)
}

// Field describes the field read: its canonical path, kind, type and unit.
func (a *Accessor) Field() Field { return a.field }

// locate returns the offset of the value in msg, walking the plan.
func (a *Accessor) locate(msg []byte) (int, bool) {
	if a.plan == nil {
		return a.off, true
	}
	off, ok := 0, true
	for i := range a.plan {
		s := &a.plan[i]
		off += s.skip
		if nd := s.nd; nd.kind == nStr || nd.kind == nBytes { // the common case, inline
			for range s.count {
				l, ok := readLen(nd, msg, off)
				if !ok {
					return 0, false
				}
				off += nd.size + l
			}
			continue
		}
		for range s.count {
			if off, ok = skip(s.nd, msg, off); !ok {
				return 0, false
			}
		}
	}
	return off + a.off, true
}

// bits returns the raw bits of a scalar field.
func (a *Accessor) bits(msg []byte) (uint64, bool) {
	off, ok := a.locate(msg)
	if !ok || a.kind != nScalar || a.size > len(msg)-off {
		return 0, false
	}
	return scalarBits(a.prim, a.big, msg[off:off+a.size]), true
}

// Float64 returns a numeric field's value (integers converted, beyond 2^53
// with rounding; bool as 0 or 1). It is false when the message is too
// short, or the field is text or bytes.
func (a *Accessor) Float64(msg []byte) (float64, bool) {
	off := a.off
	if a.plan != nil {
		var ok bool
		if off, ok = a.locate(msg); !ok {
			return 0, false
		}
	}
	if a.kind != nScalar || a.size > len(msg)-off {
		return 0, false
	}
	b := msg[off:]
	// One switch on type and byte order: this is the hot path.
	switch a.code {
	case codeF32LE:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), true
	case codeF64LE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case codeF32BE:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), true
	case codeF64BE:
		return math.Float64frombits(binary.BigEndian.Uint64(b)), true
	case codeU8:
		return float64(b[0]), true
	case codeI8:
		return float64(int8(b[0])), true
	case codeU16LE:
		return float64(binary.LittleEndian.Uint16(b)), true
	case codeI16LE:
		return float64(int16(binary.LittleEndian.Uint16(b))), true
	case codeU32LE:
		return float64(binary.LittleEndian.Uint32(b)), true
	case codeI32LE:
		return float64(int32(binary.LittleEndian.Uint32(b))), true
	case codeU64LE:
		return float64(binary.LittleEndian.Uint64(b)), true
	case codeI64LE:
		return float64(int64(binary.LittleEndian.Uint64(b))), true
	}
	return bitsFloat(a.prim, scalarBits(a.prim, a.big, b[:a.size])), true
}

// Int64 returns an integer or bool field's value. It is false when the
// message is too short, the field is a float, text or bytes, or an
// unsigned value exceeds math.MaxInt64.
func (a *Accessor) Int64(msg []byte) (int64, bool) {
	b, ok := a.bits(msg)
	if !ok {
		return 0, false
	}
	switch a.prim {
	case primI8, primI16, primI32, primI64:
		return signed(a.prim, b), true
	case primF32, primF64:
		return 0, false
	case primBool:
		return int64(min(b, 1)), true
	}
	if b > math.MaxInt64 {
		return 0, false
	}
	return int64(b), true
}

// Uint64 returns an integer or bool field's value. It is false when the
// message is too short, the field is a float, text or bytes, or a signed
// value is negative.
func (a *Accessor) Uint64(msg []byte) (uint64, bool) {
	b, ok := a.bits(msg)
	if !ok {
		return 0, false
	}
	switch a.prim {
	case primI8, primI16, primI32, primI64:
		v := signed(a.prim, b)
		return uint64(v), v >= 0
	case primF32, primF64:
		return 0, false
	case primBool:
		return min(b, 1), true
	}
	return b, true
}

// Bytes returns a text or bytes field's content: the bytes of a string or
// bytes field, a char field up to its first NUL. The slice aliases msg. It
// is false when the message is too short or the field is a number.
func (a *Accessor) Bytes(msg []byte) ([]byte, bool) {
	off, ok := a.locate(msg)
	if !ok {
		return nil, false
	}
	switch a.kind {
	case nChar:
		if a.size > len(msg)-off {
			return nil, false
		}
		b := msg[off : off+a.size]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return b, true
	case nStr, nBytes:
		nd := node{size: a.size, big: a.big}
		l, ok := readLen(&nd, msg, off)
		if !ok {
			return nil, false
		}
		return msg[off+a.size : off+a.size+l], true
	}
	return nil, false
}
