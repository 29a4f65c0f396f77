package schema

import (
	"encoding/binary"
	"math"
)

// prim is a scalar type of the layout language.
type prim uint8

const (
	primU8 prim = iota + 1
	primI8
	primBool
	primU16
	primI16
	primU32
	primI32
	primU64
	primI64
	primF32
	primF64
)

var primSize = [...]int{primU8: 1, primI8: 1, primBool: 1, primU16: 2, primI16: 2, primU32: 4, primI32: 4,
	primU64: 8, primI64: 8, primF32: 4, primF64: 8}

func (p prim) kind() Kind {
	switch p {
	case primBool:
		return KindBool
	case primI8, primI16, primI32, primI64:
		return KindInt
	case primF32, primF64:
		return KindFloat
	}
	return KindUint
}

// nodeKind is what a layout node is.
type nodeKind uint8

const (
	nScalar nodeKind = iota + 1
	nPad             // pad N: skipped bytes
	nChar            // char name[N]: N bytes of text, NUL-padded
	nStr             // strN: length prefix, then that many bytes of text
	nBytes           // bytesN: length prefix, then that many bytes
	nStruct          // a struct type used as a field
	nArray           // elem[n]
)

// node is a type in a compiled layout. Nodes are immutable after parsing.
type node struct {
	kind  nodeKind
	prim  prim // nScalar
	big   bool // big-endian scalar or length prefix
	fixed bool // the size does not depend on the message
	// size is the size in bytes when fixed, else the least size (strings
	// and bytes at their prefix: 1, 2 or 4). Every node has size >= 1, so
	// a walk consumes at least one byte per node and is bounded by the
	// message's length.
	size int
	n    int   // nArray: element count; nChar, nPad: bytes
	elem *node // nArray
	st   *structType
	typ  string // the type as written: "f32le", "char[16]", "pose"
}

type member struct {
	name string // "" for pad
	node *node
	unit string
	// off is the offset from the start of the struct when every member
	// before is fixed-size, else -1.
	off int
}

type structType struct {
	name    string // "" for the message itself
	members []member
	fixed   bool
	size    int // as node.size
	leaves  int // leaf fields, arrays counted once
	depth   int // 1 + the deepest struct among the members
	pathLen int // the longest path to a leaf, indices at their largest
}

// Layout is a compiled layout: the description of a packed struct in
// edr-lite's layout language (docs/schemas.md, "The layout language").
// It implements Decoder, and hands out Accessors for single fields.
//
// A Layout is immutable and safe for concurrent use.
type Layout struct {
	root   *structType
	fields []Field
}

// MinSize returns the size of the smallest message the layout can describe
// (every string empty). A message shorter than that is short whatever it
// holds.
func (l *Layout) MinSize() int { return l.root.size }

// Fixed reports whether every message has the same size (MinSize): the
// layout has no length-prefixed strings or bytes.
func (l *Layout) Fixed() bool { return l.root.fixed }

// Fields lists the leaf fields, pad excepted, in declaration order: paths
// with "[]" for array elements ("wheel[]", Dims [4]; "ps[].x"). The slice
// is shared; do not modify it.
func (l *Layout) Fields() []Field { return l.fields }

// buildFields lists the leaves of st under prefix.
func buildFields(out []Field, st *structType, prefix []byte, dims []int) []Field {
	for _, m := range st.members {
		if m.node.kind == nPad {
			continue
		}
		out = buildNodeFields(out, m.node, appendPathKey(prefix, m.name), dims, m.unit)
	}
	return out
}

func buildNodeFields(out []Field, nd *node, path []byte, dims []int, unit string) []Field {
	switch nd.kind {
	case nStruct:
		return buildFields(out, nd.st, path, dims)
	case nArray:
		d := append(dims[:len(dims):len(dims)], nd.n)
		return buildNodeFields(out, nd.elem, append(path, "[]"...), d, unit)
	}
	f := Field{Path: string(path), Type: nd.typ, Unit: unit}
	if len(dims) > 0 {
		f.Dims = append([]int(nil), dims...)
	}
	switch nd.kind {
	case nScalar:
		f.Kind = nd.prim.kind()
	case nChar, nStr:
		f.Kind = KindString
	case nBytes:
		f.Kind = KindBytes
	}
	return append(out, f)
}

// readLen reads the length prefix of a string or bytes node at off, and
// checks that the prefix and what it announces lie inside msg.
func readLen(nd *node, msg []byte, off int) (int, bool) {
	if off < 0 || nd.size > len(msg)-off {
		return 0, false
	}
	var l uint64
	switch nd.size {
	case 1:
		l = uint64(msg[off])
	case 2:
		if nd.big {
			l = uint64(binary.BigEndian.Uint16(msg[off:]))
		} else {
			l = uint64(binary.LittleEndian.Uint16(msg[off:]))
		}
	default:
		if nd.big {
			l = uint64(binary.BigEndian.Uint32(msg[off:]))
		} else {
			l = uint64(binary.LittleEndian.Uint32(msg[off:]))
		}
	}
	if l > uint64(len(msg)-off-nd.size) {
		return 0, false
	}
	return int(l), true
}

// skip returns the offset after the node that starts at off, and false
// when the message ends first. Its cost is one step per string inside the
// node (arrays of fixed-size elements are one step).
func skip(nd *node, msg []byte, off int) (int, bool) {
	if nd.fixed {
		if nd.size > len(msg)-off {
			return 0, false
		}
		return off + nd.size, true
	}
	var ok bool
	switch nd.kind {
	case nStr, nBytes:
		var l int
		if l, ok = readLen(nd, msg, off); !ok {
			return 0, false
		}
		return off + nd.size + l, true
	case nArray:
		for range nd.n {
			if off, ok = skip(nd.elem, msg, off); !ok {
				return 0, false
			}
		}
		return off, true
	case nStruct:
		return skipMembers(nd.st.members, msg, off)
	}
	panic("BUG: schema: skip of an unknown node kind")
}

func skipMembers(ms []member, msg []byte, off int) (int, bool) {
	var ok bool
	for i := range ms {
		if off, ok = skip(ms[i].node, msg, off); !ok {
			return 0, false
		}
	}
	return off, true
}

// scalarBits reads the raw bits of a scalar at off; the caller checked
// the bounds.
func scalarBits(p prim, big bool, b []byte) uint64 {
	switch primSize[p] {
	case 1:
		return uint64(b[0])
	case 2:
		if big {
			return uint64(binary.BigEndian.Uint16(b))
		}
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		if big {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	}
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// signed sign-extends the bits of a signed scalar.
func signed(p prim, bits uint64) int64 {
	s := 64 - 8*uint(primSize[p])
	return int64(bits<<s) >> s
}

func bitsFloat(p prim, bits uint64) float64 {
	switch p {
	case primF32:
		return float64(math.Float32frombits(uint32(bits)))
	case primF64:
		return math.Float64frombits(bits)
	case primI8, primI16, primI32, primI64:
		return float64(signed(p, bits))
	case primBool:
		if bits != 0 {
			return 1
		}
		return 0
	}
	return float64(bits)
}
