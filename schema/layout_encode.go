package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendPacked is the inverse of AppendJSON: it appends the packed message
// that the JSON object js (as AppendJSON writes it) describes, so a topic
// transcoded to JSON for viewers (an MCAP export) can be read back as the
// packed struct it was. Members are matched by name and every member the
// layout declares must be there (extra ones are an error); integers must be
// integral and in range, floats may also be "NaN", "Infinity",
// "-Infinity", bytes fields are base64.
//
// The bytes come back canonical: padding zero, a char field's text
// NUL-padded (and cut at a character boundary when longer than the field:
// text AppendJSON had to repair), bools 0 or 1, NaN the quiet NaN. A
// message that was canonical to begin with (what a C producer writes after
// memset) comes back byte for byte; bytes after the layout's end, which
// AppendJSON ignores, are not in the JSON and do not come back. Errors wrap
// ErrBadMessage and name the member. It allocates (it decodes js with
// encoding/json); it is for offline conversion, not hot paths.
func (l *Layout) AppendPacked(dst, js []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return dst, fmt.Errorf("%w: not JSON: %v", ErrBadMessage, err)
	}
	if d.More() {
		return dst, fmt.Errorf("%w: more than one JSON value", ErrBadMessage)
	}
	out, err := packStruct(dst, l.root, v, nil)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func packErr(path []byte, format string, args ...any) error {
	p := string(path)
	if p == "" {
		p = "(message)"
	}
	return fmt.Errorf("%w: %s: %s", ErrBadMessage, p, fmt.Sprintf(format, args...))
}

func packStruct(dst []byte, st *structType, v any, path []byte) ([]byte, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return dst, packErr(path, "want an object, got %s", jsonKind(v))
	}
	n := len(path)
	seen := 0
	for i := range st.members {
		m := &st.members[i]
		if m.node.kind == nPad {
			dst = append(dst, make([]byte, m.node.size)...)
			continue
		}
		path = appendPathKey(path[:n], m.name)
		mv, ok := obj[m.name]
		if !ok {
			return dst, packErr(path, "missing")
		}
		seen++
		var err error
		if dst, err = packNode(dst, m.node, mv, path); err != nil {
			return dst, err
		}
	}
	if seen != len(obj) {
		for k := range obj {
			if st.member(k) == nil {
				return dst, packErr(appendPathKey(path[:n], k), "not a member of the layout")
			}
		}
	}
	return dst, nil
}

// member returns the member called name, nil when none.
func (st *structType) member(name string) *member {
	for i := range st.members {
		if st.members[i].name == name && st.members[i].node.kind != nPad {
			return &st.members[i]
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func packNode(dst []byte, nd *node, v any, path []byte) ([]byte, error) {
	switch nd.kind {
	case nScalar:
		bits, err := scalarFromJSON(nd.prim, v, path)
		if err != nil {
			return dst, err
		}
		return appendBits(dst, nd.prim, nd.big, bits), nil
	case nChar:
		s, ok := v.(string)
		if !ok {
			return dst, packErr(path, "want a string, got %s", jsonKind(v))
		}
		b := []byte(s)
		for len(b) > nd.n { // repaired text longer than the field: cut at a character boundary
			_, size := utf8.DecodeLastRune(b)
			b = b[:len(b)-size]
		}
		dst = append(dst, b...)
		return append(dst, make([]byte, nd.n-len(b))...), nil
	case nStr, nBytes:
		s, ok := v.(string)
		if !ok {
			return dst, packErr(path, "want a string, got %s", jsonKind(v))
		}
		b := []byte(s)
		if nd.kind == nBytes {
			var err error
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return dst, packErr(path, "not base64: %v", err)
			}
		}
		if max := uint64(1)<<(8*nd.size) - 1; uint64(len(b)) > max {
			return dst, packErr(path, "%d bytes do not fit a %d-byte length prefix", len(b), nd.size)
		}
		p := primU8
		switch nd.size {
		case 2:
			p = primU16
		case 4:
			p = primU32
		}
		dst = appendBits(dst, p, nd.big, uint64(len(b)))
		return append(dst, b...), nil
	case nArray:
		arr, ok := v.([]any)
		if !ok || len(arr) != nd.n {
			return dst, packErr(path, "want an array of %d, got %s", nd.n, jsonKind(v))
		}
		n := len(path)
		for i, e := range arr {
			var err error
			if dst, err = packNode(dst, nd.elem, e, appendPathIndex(path[:n], i)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case nStruct:
		return packStruct(dst, nd.st, v, path)
	}
	panic("BUG: schema: packing an unknown node kind")
}

func scalarFromJSON(p prim, v any, path []byte) (uint64, error) {
	if p == primBool {
		b, ok := v.(bool)
		if !ok {
			return 0, packErr(path, "want a bool, got %s", jsonKind(v))
		}
		if b {
			return 1, nil
		}
		return 0, nil
	}
	if p == primF32 || p == primF64 {
		var f float64
		switch x := v.(type) {
		case json.Number:
			var err error
			if f, err = strconv.ParseFloat(string(x), 64); err != nil {
				return 0, packErr(path, "%s is not a float", x)
			}
		case string:
			switch x {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return 0, packErr(path, "%q is not a float", x)
			}
		default:
			return 0, packErr(path, "want a number, got %s", jsonKind(v))
		}
		if p == primF32 {
			return uint64(math.Float32bits(float32(f))), nil
		}
		return math.Float64bits(f), nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, packErr(path, "want an integer, got %s", jsonKind(v))
	}
	bits := 8 * primSize[p]
	switch p {
	case primI8, primI16, primI32, primI64:
		i, err := strconv.ParseInt(string(num), 10, bits)
		if err != nil {
			return 0, packErr(path, "%s is not an int%d", num, bits)
		}
		return uint64(i), nil // appendBits keeps the low bytes: two's complement
	}
	u, err := strconv.ParseUint(string(num), 10, bits)
	if err != nil {
		return 0, packErr(path, "%s is not a uint%d", num, bits)
	}
	return u, nil
}

// appendBits appends the low bytes of bits as scalar p in its byte order.
func appendBits(dst []byte, p prim, big bool, bits uint64) []byte {
	var order binary.AppendByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	switch primSize[p] {
	case 1:
		return append(dst, byte(bits))
	case 2:
		return order.AppendUint16(dst, uint16(bits))
	case 4:
		return order.AppendUint32(dst, uint32(bits))
	}
	return order.AppendUint64(dst, bits)
}
