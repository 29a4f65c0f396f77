package schema

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"sync"
)

// check returns ErrShortMessage when msg ends before the layout does. For
// a fixed layout it is one comparison; otherwise one walk over the strings.
func (l *Layout) check(msg []byte) error {
	if l.root.fixed {
		if len(msg) < l.root.size {
			return ErrShortMessage
		}
		return nil
	}
	if _, ok := skipMembers(l.root.members, msg, 0); !ok {
		return ErrShortMessage
	}
	return nil
}

// AppendJSON appends msg as one JSON object: members in declaration order,
// pad left out, arrays as arrays, structs as objects, integers exact
// (64-bit ones too), floats as encoding/json writes them (NaN and
// infinities as the strings "NaN", "Infinity", "-Infinity"), char and
// string fields as strings (invalid UTF-8 replaced by U+FFFD), bytes
// fields base64. Bytes after the layout's end are ignored.
//
// It allocates nothing when dst has room. On error (ErrShortMessage) it
// returns dst unchanged.
func (l *Layout) AppendJSON(dst, msg []byte) ([]byte, error) {
	if err := l.check(msg); err != nil {
		return dst, err
	}
	dst, _ = appendStructJSON(dst, l.root, msg, 0)
	return dst, nil
}

func appendStructJSON(dst []byte, st *structType, msg []byte, off int) ([]byte, int) {
	dst = append(dst, '{')
	first := true
	for i := range st.members {
		m := &st.members[i]
		if m.node.kind == nPad {
			off += m.node.size
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, m.name...)
		dst = append(dst, '"', ':')
		dst, off = appendNodeJSON(dst, m.node, msg, off)
	}
	return append(dst, '}'), off
}

func appendNodeJSON(dst []byte, nd *node, msg []byte, off int) ([]byte, int) {
	switch nd.kind {
	case nScalar:
		bits := scalarBits(nd.prim, nd.big, msg[off:off+nd.size])
		switch nd.prim {
		case primBool:
			if bits != 0 {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case primF32:
			dst = appendJSONFloat(dst, float64(math.Float32frombits(uint32(bits))), 32)
		case primF64:
			dst = appendJSONFloat(dst, math.Float64frombits(bits), 64)
		case primI8, primI16, primI32, primI64:
			dst = strconv.AppendInt(dst, signed(nd.prim, bits), 10)
		default:
			dst = strconv.AppendUint(dst, bits, 10)
		}
		return dst, off + nd.size
	case nChar:
		b := msg[off : off+nd.n]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return appendJSONString(dst, b), off + nd.n
	case nStr, nBytes:
		n, _ := readLen(nd, msg, off)
		b := msg[off+nd.size : off+nd.size+n]
		if nd.kind == nStr {
			dst = appendJSONString(dst, b)
		} else {
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, b)
			dst = append(dst, '"')
		}
		return dst, off + nd.size + n
	case nArray:
		dst = append(dst, '[')
		for i := range nd.n {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, off = appendNodeJSON(dst, nd.elem, msg, off)
		}
		return append(dst, ']'), off
	case nStruct:
		return appendStructJSON(dst, nd.st, msg, off)
	}
	panic("BUG: schema: JSON of an unknown node kind")
}

// pathBufs holds path buffers for the numeric walks, so a walk allocates
// nothing once the pool is warm.
var pathBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Numeric calls fn for every numeric leaf of msg in declaration order, with
// its concrete path ("speed", "wheel[2]", "ps[1].x") and value (integers
// converted to float64, beyond 2^53 rounded; bool as 0 or 1). Strings,
// bytes and pad are skipped. path is valid only during the call (copy it
// to keep it; a map lookup m[string(path)] does not allocate).
//
// Called on a *Layout (not through the Decoder interface) it allocates
// nothing. On error (ErrShortMessage) fn has not been called.
func (l *Layout) Numeric(msg []byte, fn func(path []byte, v float64)) error {
	if err := l.check(msg); err != nil {
		return err
	}
	pb := pathBufs.Get().(*[]byte)
	path, _ := numericStruct((*pb)[:0], l.root, msg, 0, fn)
	*pb = path[:0]
	pathBufs.Put(pb)
	return nil
}

func numericStruct(path []byte, st *structType, msg []byte, off int, fn func([]byte, float64)) ([]byte, int) {
	n := len(path)
	for i := range st.members {
		m := &st.members[i]
		if m.node.kind == nPad {
			off += m.node.size
			continue
		}
		path = appendPathKey(path[:n], m.name)
		path, off = numericNode(path, m.node, msg, off, fn)
	}
	return path[:n], off
}

func numericNode(path []byte, nd *node, msg []byte, off int, fn func([]byte, float64)) ([]byte, int) {
	switch nd.kind {
	case nScalar:
		fn(path, bitsFloat(nd.prim, scalarBits(nd.prim, nd.big, msg[off:off+nd.size])))
		return path, off + nd.size
	case nArray:
		n := len(path)
		for i := range nd.n {
			path = appendPathIndex(path[:n], i)
			path, off = numericNode(path, nd.elem, msg, off, fn)
		}
		return path[:n], off
	case nStruct:
		return numericStruct(path, nd.st, msg, off, fn)
	case nStr, nBytes:
		l, _ := readLen(nd, msg, off)
		return path, off + nd.size + l
	}
	return path, off + nd.size // char
}
