package step

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// Packed returns the Codec of a Go struct T sent as the packed struct that
// layout describes (edr-lite's layout language, docs/schemas.md): message
// encoding x-edr-packed, the layout as the schema, the type named name.
//
// Fields bind by name: a layout member binds to the field of T tagged
// `edr:"member"`, else to the exported field whose name equals the
// member's ignoring case (speed → Speed); nested structs bind to struct
// fields the same way. Every member binds to exactly one field and every
// exported field of T to a member, unless tagged `edr:"-"` (left out:
// Append ignores it, Decode leaves it as it is), so a typo is an error
// here, not a zero in the recording. The Go types a member may bind to:
//
//	f32le f32be                float32
//	f64le f64be                float64
//	bool                       bool
//	iN (i8 .. i64)             a signed integer of N bits or more
//	uN (u8 .. u64)             an unsigned integer of N bits or more, or a signed one of more
//	char x[N]                  string (at most N bytes; NUL-padded) or [N]byte
//	strN, bytesN               string or []byte
//	a struct                   a struct
//	type x[N]                  [N]E or []E (of exactly N elements)
//
// Append refuses a value the layout cannot hold (an integer out of the
// member's range, a string too long, a slice of another length) with an
// error naming the field. For layouts of fixed size made of scalars,
// Append and Decode allocate nothing (strings, byte slices and slices are
// allocated by Decode).
func Packed[T any](name, layout string) (Codec[T], error) {
	l, err := schema.ParseLayout([]byte(layout))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCodec, name, err)
	}
	typ := ingest.Packed(name, layout)
	if err := schema.Check(typ); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCodec, name, err)
	}
	gt := reflect.TypeFor[T]()
	if gt.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s: a packed layout binds to a struct, not %v", ErrCodec, name, gt)
	}
	ops, err := bindStruct(l.Members(), gt, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCodec, name, err)
	}
	return &packedCodec[T]{typ: typ, ops: ops, min: l.MinSize()}, nil
}

type packedCodec[T any] struct {
	typ ingest.Type
	ops []op
	min int
}

func (c *packedCodec[T]) Type() ingest.Type { return c.typ }

// opKind is what an op reads or writes.
type opKind uint8

const (
	opScalar opKind = iota + 1
	opPad
	opChar
	opStr // strN and bytesN: a length prefix, then the bytes
	opStruct
	opArray
)

// op binds one layout member to a place in a Go value: offsets are
// relative to the enclosing struct (or array element).
type op struct {
	kind   opKind
	path   string // the member's path, for errors
	off    uintptr
	scalar schema.Kind  // opScalar
	size   int          // scalar size, pad or char bytes, length prefix size
	big    bool         // byte order of a scalar or length prefix
	gk     reflect.Kind // the Go field's kind
	n      int          // opArray: element count
	sub    []op         // opStruct: members; opArray: the element (one op at offset 0)
	esize  uintptr      // opArray: Go element size
	slice  reflect.Type // opArray into a slice, opStr/opChar into []byte: the slice type (nil: array or string)
}

func intBits(k reflect.Kind) (bits int, signed bool, ok bool) {
	switch k {
	case reflect.Int8:
		return 8, true, true
	case reflect.Int16:
		return 16, true, true
	case reflect.Int32:
		return 32, true, true
	case reflect.Int64:
		return 64, true, true
	case reflect.Int:
		return strconv.IntSize, true, true
	case reflect.Uint8:
		return 8, false, true
	case reflect.Uint16:
		return 16, false, true
	case reflect.Uint32:
		return 32, false, true
	case reflect.Uint64:
		return 64, false, true
	case reflect.Uint:
		return strconv.IntSize, false, true
	}
	return 0, false, false
}

// fieldFor finds the field of st that member name binds to.
func fieldFor(st reflect.Type, name string) (reflect.StructField, error) {
	var found []reflect.StructField
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("edr"), ",")
		if tag == name {
			return f, nil
		}
		if tag == "" && f.IsExported() && strings.EqualFold(f.Name, name) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return reflect.StructField{}, fmt.Errorf("%s has no field for layout member %q (name a field so, or tag it `edr:%q`)", st, name, name)
	case 1:
		return found[0], nil
	}
	return reflect.StructField{}, fmt.Errorf("%s: fields %s and %s both match layout member %q: tag one `edr:%q`", st, found[0].Name, found[1].Name, name, name)
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// bindStruct binds the members of a layout struct to the fields of st.
func bindStruct(ms []schema.LayoutMember, st reflect.Type, prefix string) ([]op, error) {
	var ops []op
	bound := map[int]bool{}
	for _, m := range ms {
		if m.Node.Kind == schema.LayoutPad {
			ops = append(ops, op{kind: opPad, size: m.Node.Size})
			continue
		}
		path := joinPath(prefix, m.Name)
		f, err := fieldFor(st, m.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if !f.IsExported() {
			return nil, fmt.Errorf("%s: field %s of %s is not exported", path, f.Name, st)
		}
		if len(f.Index) != 1 {
			return nil, fmt.Errorf("%s: field %s of %s is promoted from an embedded struct: bind the embedded struct instead", path, f.Name, st)
		}
		bound[f.Index[0]] = true
		o, err := bindNode(m.Node, f.Type, path)
		if err != nil {
			return nil, err
		}
		o.off = f.Offset
		ops = append(ops, o)
	}
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("edr"), ",")
		if bound[i] || tag == "-" || !f.IsExported() {
			continue
		}
		return nil, fmt.Errorf("field %s of %s is not in the layout%s (tag it `edr:\"-\"` to leave it out)", f.Name, st, under(prefix))
	}
	return ops, nil
}

func under(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " under " + prefix
}

// bindNode binds one layout node to Go type gt.
func bindNode(nd schema.LayoutNode, gt reflect.Type, path string) (op, error) {
	o := op{path: path, gk: gt.Kind(), size: nd.Size, big: nd.BigEndian}
	bad := func(want string) (op, error) {
		return op{}, fmt.Errorf("%s: layout type %s binds to %s, not %v", path, nd.Type, want, gt)
	}
	switch nd.Kind {
	case schema.LayoutScalar:
		o.kind, o.scalar = opScalar, nd.Scalar
		switch nd.Scalar {
		case schema.KindFloat:
			if (nd.Size == 4 && o.gk != reflect.Float32) || (nd.Size == 8 && o.gk != reflect.Float64) {
				return bad("float" + strconv.Itoa(8*nd.Size))
			}
		case schema.KindBool:
			if o.gk != reflect.Bool {
				return bad("bool")
			}
		case schema.KindInt:
			if bits, signed, ok := intBits(o.gk); !ok || !signed || bits < 8*nd.Size {
				return bad("a signed integer of " + strconv.Itoa(8*nd.Size) + " bits or more")
			}
		case schema.KindUint:
			bits, signed, ok := intBits(o.gk)
			if !ok || (!signed && bits < 8*nd.Size) || (signed && bits <= 8*nd.Size) {
				return bad("an unsigned integer of " + strconv.Itoa(8*nd.Size) + " bits or more, or a wider signed one")
			}
		default:
			return op{}, fmt.Errorf("BUG: step: layout scalar of kind %v", nd.Scalar)
		}
	case schema.LayoutChar:
		o.kind = opChar
		switch {
		case o.gk == reflect.String:
		case o.gk == reflect.Array && gt.Elem().Kind() == reflect.Uint8 && gt.Len() == nd.Size:
		default:
			return bad("string or [" + strconv.Itoa(nd.Size) + "]byte")
		}
	case schema.LayoutString, schema.LayoutBytes:
		o.kind = opStr
		switch {
		case o.gk == reflect.String:
		case o.gk == reflect.Slice && gt.Elem().Kind() == reflect.Uint8:
			o.slice = gt
		default:
			return bad("string or []byte")
		}
	case schema.LayoutStruct:
		if o.gk != reflect.Struct {
			return bad("a struct")
		}
		sub, err := bindStruct(nd.Members, gt, path)
		if err != nil {
			return op{}, err
		}
		o.kind, o.sub = opStruct, sub
	case schema.LayoutArray:
		o.kind, o.n = opArray, nd.Len
		switch {
		case o.gk == reflect.Array && gt.Len() == nd.Len:
		case o.gk == reflect.Slice:
			o.slice = gt
		default:
			return bad("[" + strconv.Itoa(nd.Len) + "]E or []E")
		}
		o.esize = gt.Elem().Size()
		e, err := bindNode(*nd.Elem, gt.Elem(), path+"[]")
		if err != nil {
			return op{}, err
		}
		o.sub = []op{e}
	default:
		return op{}, fmt.Errorf("BUG: step: layout node of kind %d", nd.Kind)
	}
	return o, nil
}
