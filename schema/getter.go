package schema

import (
	"fmt"
	"math"
	"strconv"
)

// Value is one leaf field read by a Getter.
type Value struct {
	// Kind is the field's kind: a number (KindBool, KindInt, KindUint,
	// KindFloat, KindEnum: Num holds it, bool as 0 or 1) or text
	// (KindString, KindBytes: Bytes holds it).
	Kind Kind
	Num  float64
	// Bytes aliases the message (packed text and bytes, JSON strings
	// without escapes) or is a fresh copy (a JSON string with escapes).
	Bytes []byte
}

// Getter reads one leaf field, named by a field path compiled once, from
// the messages of one type: what a Lua rule's m.speed / m:f("wheel[2]")
// runs (package scripts).
//
//   - packed: an Accessor (an offset computed once); no allocation.
//   - protobuf: a scan of the wire bytes along the path, no decode, no
//     allocation (numeric, bool and enum leaves; a field the message does
//     not hold reads as its default, like protobuf's own getters).
//   - json: a validation of the whole message, then a scan of the text to
//     the member (numbers, booleans, strings; null or an absent member
//     reads as false).
//
// A Getter is immutable and safe for concurrent use.
type Getter struct {
	field Field
	acc   *Accessor
	pb    []pbStep
	elems []pathElem // json
}

// NewGetter compiles path for the messages d decodes (a Decoder from
// NewDecoder). Errors wrap ErrNoField and say what the schema has instead.
func NewGetter(d Decoder, path string) (*Getter, error) {
	elems, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	g := &Getter{field: Field{Path: path}}
	switch d := d.(type) {
	case *Layout:
		a, err := d.Accessor(path)
		if err != nil {
			return nil, err
		}
		g.acc, g.field = a, a.Field()
	case *protoDecoder:
		steps, fd, err := pbCompile(d.md, elems)
		if err != nil {
			return nil, err
		}
		k := protoKind(fd.Kind())
		if !k.Numeric() {
			return nil, fmt.Errorf("%w: %q is a %s field: only numbers, bools and enums are read by path from protobuf", ErrNoField, path, fd.Kind())
		}
		g.pb, g.field = steps, Field{Path: path, Kind: k, Type: fd.Kind().String()}
	case *jsonDecoder:
		g.elems = elems
	default:
		return nil, fmt.Errorf("%w: %q: the type is not decoded", ErrNoField, path)
	}
	return g, nil
}

// Field describes the field the Getter reads (for JSON only its Path:
// each message says what it holds).
func (g *Getter) Field() Field { return g.field }

// Get reads the field of msg; false when msg does not hold it (too short,
// absent, malformed, or for JSON an object, array or null).
func (g *Getter) Get(msg []byte) (Value, bool) {
	switch {
	case g.acc != nil:
		a := g.acc
		if a.kind == nScalar {
			f, ok := a.Float64(msg)
			return Value{Kind: g.field.Kind, Num: f}, ok
		}
		b, ok := a.Bytes(msg)
		return Value{Kind: g.field.Kind, Bytes: b}, ok
	case g.pb != nil:
		v, ok := pbLookup(msg, g.pb, 0)
		if !ok {
			return Value{}, false
		}
		out := Value{Kind: v.kind}
		switch v.kind {
		case KindInt, KindEnum:
			out.Num = float64(v.i)
		case KindUint, KindBool:
			out.Num = float64(v.u)
		default:
			out.Num = v.f
		}
		return out, true
	}
	if checkObject(msg) != nil {
		return Value{}, false
	}
	w := jsonWalker{s: msg}
	raw, ok := w.lookup(g.elems)
	if !ok || len(raw) == 0 {
		return Value{}, false
	}
	switch c := raw[0]; {
	case c == 't':
		return Value{Kind: KindBool, Num: 1}, true
	case c == 'f':
		return Value{Kind: KindBool}, true
	case c == '"':
		s := raw[1 : len(raw)-1]
		for _, b := range s {
			if b == '\\' {
				u, ok := unquoteJSON(raw)
				return Value{Kind: KindString, Bytes: []byte(u)}, ok
			}
		}
		return Value{Kind: KindString, Bytes: s}, true
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil && !math.IsInf(f, 0) {
			return Value{}, false
		}
		return Value{Kind: KindFloat, Num: f}, true
	}
	return Value{}, false
}
