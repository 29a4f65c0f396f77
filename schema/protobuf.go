package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoDecoder decodes protobuf messages with descriptors built from a
// FileDescriptorSet, through dynamicpb.
type protoDecoder struct {
	md     protoreflect.MessageDescriptor
	fields []Field
	unm    proto.UnmarshalOptions
	json   protojson.MarshalOptions
}

func newProtobuf(s Schema) (*protoDecoder, error) {
	fds := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(s.Data, fds); err != nil {
		return nil, fmt.Errorf("%w: protobuf schema %q: not a FileDescriptorSet: %v", ErrInvalid, s.Name, err)
	}
	files, err := protodesc.NewFiles(fds)
	if err != nil {
		return nil, fmt.Errorf("%w: protobuf schema %q: bad descriptor: %v", ErrInvalid, s.Name, err)
	}
	name := protoreflect.FullName(strings.TrimPrefix(s.Name, "."))
	d, err := files.FindDescriptorByName(name)
	if err != nil {
		return nil, fmt.Errorf("%w: protobuf schema: message %q is not in the descriptor set (%d files)",
			ErrInvalid, s.Name, files.NumFiles())
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("%w: protobuf schema: %q is not a message", ErrInvalid, s.Name)
	}
	w := protoFieldWalk{}
	if err := w.message(md, nil, nil, []protoreflect.FullName{md.FullName()}); err != nil {
		return nil, fmt.Errorf("protobuf schema %q: %w", s.Name, err)
	}
	types := dynamicpb.NewTypes(files)
	return &protoDecoder{
		md:     md,
		fields: w.out,
		// The recursion limit makes every message the walks see nest at
		// most MaxDepth deep.
		unm:  proto.UnmarshalOptions{RecursionLimit: MaxDepth, Resolver: types},
		json: protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true, Resolver: types},
	}, nil
}

func (d *protoDecoder) Fields() []Field { return d.fields }

func (d *protoDecoder) decode(msg []byte) (*dynamicpb.Message, error) {
	m := dynamicpb.NewMessage(d.md)
	if err := d.unm.Unmarshal(msg, m); err != nil {
		return nil, fmt.Errorf("%w: protobuf %s: %v", ErrBadMessage, d.md.FullName(), err)
	}
	return m, nil
}

// AppendJSON writes the message with protojson: proto field names
// (header.frame_id, not frameId), fields at their default values included,
// enums by name, 64-bit integers as strings and bytes as base64 (the
// protobuf JSON mapping). protojson varies its whitespace from build to
// build; the JSON is always one line. A well-known type whose JSON is
// not an object (google.protobuf.Timestamp is an RFC 3339 string, the
// wrappers are bare values) is wrapped as {"value": ...}.
func (d *protoDecoder) AppendJSON(dst, msg []byte) ([]byte, error) {
	m, err := d.decode(msg)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	out, err := d.json.MarshalAppend(dst, m)
	if err != nil {
		return dst, fmt.Errorf("%w: protobuf %s: %v", ErrBadMessage, d.md.FullName(), err)
	}
	if i := skipSpace(out, n); i < len(out) && out[i] != '{' {
		v := append([]byte(nil), out[n:]...)
		out = append(append(append(out[:n], `{"value":`...), v...), '}')
	}
	return out, nil
}

// Numeric walks the fields in declaration order: singular scalars always
// (their default when not set) unless they track presence and are unset,
// repeated fields element by element (name[i]), map entries by key in
// order (name.key or name["key"]), set sub-messages recursively.
func (d *protoDecoder) Numeric(msg []byte, fn func(path []byte, v float64)) error {
	m, err := d.decode(msg)
	if err != nil {
		return err
	}
	pb := pathBufs.Get().(*[]byte)
	path := protoNumeric((*pb)[:0], m, fn)
	*pb = path[:0]
	pathBufs.Put(pb)
	return nil
}

func protoNumeric(path []byte, m protoreflect.Message, fn func([]byte, float64)) []byte {
	fields := m.Descriptor().Fields()
	n := len(path)
	for i := range fields.Len() {
		fd := fields.Get(i)
		path = appendPathKey(path[:n], string(fd.Name()))
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			k := len(path)
			for j := range l.Len() {
				path = protoValue(appendPathIndex(path[:k], j), fd, l.Get(j), fn)
			}
		case fd.IsMap():
			mp := m.Get(fd).Map()
			if mp.Len() == 0 {
				continue
			}
			keys := make([]protoreflect.MapKey, 0, mp.Len())
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			slices.SortFunc(keys, compareMapKeys)
			k := len(path)
			for _, key := range keys {
				path = protoValue(appendPathKey(path[:k], key.String()), fd.MapValue(), mp.Get(key), fn)
			}
		default:
			if fd.HasPresence() && !m.Has(fd) {
				continue
			}
			path = protoValue(path, fd, m.Get(fd), fn)
		}
	}
	return path[:n]
}

func compareMapKeys(a, b protoreflect.MapKey) int {
	switch a.Interface().(type) {
	case string:
		return strings.Compare(a.String(), b.String())
	case bool:
		return cmp.Compare(a.Int(), b.Int()) // false < true
	case int32, int64:
		return cmp.Compare(a.Int(), b.Int())
	}
	return cmp.Compare(a.Uint(), b.Uint())
}

func protoValue(path []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, fn func([]byte, float64)) []byte {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Bool() {
			fn(path, 1)
		} else {
			fn(path, 0)
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		fn(path, float64(v.Int()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		fn(path, float64(v.Uint()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		fn(path, v.Float())
	case protoreflect.EnumKind:
		fn(path, float64(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoNumeric(path, v.Message(), fn)
	}
	return path
}

// protoFieldWalk lists the leaf fields of a message type.
type protoFieldWalk struct {
	out    []Field
	visits int
}

func (w *protoFieldWalk) message(md protoreflect.MessageDescriptor, path []byte, dims []int, stack []protoreflect.FullName) error {
	fields := md.Fields()
	for i := range fields.Len() {
		if w.visits++; w.visits > MaxFields {
			return fmt.Errorf("%w: more than %d fields, nested ones included (MaxFields)", ErrLimit, MaxFields)
		}
		fd := fields.Get(i)
		p := appendPathKey(path, string(fd.Name()))
		d := dims
		switch {
		case fd.IsList():
			p = append(p, "[]"...)
			d = append(dims[:len(dims):len(dims)], -1)
		case fd.IsMap():
			p = append(p, ".*"...)
			fd = fd.MapValue()
		}
		f := Field{Path: string(p), Kind: protoKind(fd.Kind()), Type: fd.Kind().String()}
		if len(d) > 0 {
			f.Dims = slices.Clone(d)
		}
		switch fd.Kind() {
		case protoreflect.EnumKind:
			f.Type = string(fd.Enum().FullName())
		case protoreflect.MessageKind, protoreflect.GroupKind:
			sub := fd.Message()
			if len(stack) < MaxDepth && !slices.Contains(stack, sub.FullName()) {
				if err := w.message(sub, p, d, append(stack, sub.FullName())); err != nil {
					return err
				}
				continue
			}
			f.Type = string(sub.FullName())
		}
		w.out = append(w.out, f)
	}
	return nil
}

func protoKind(k protoreflect.Kind) Kind {
	switch k {
	case protoreflect.BoolKind:
		return KindBool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return KindInt
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return KindUint
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return KindFloat
	case protoreflect.EnumKind:
		return KindEnum
	case protoreflect.StringKind:
		return KindString
	case protoreflect.BytesKind:
		return KindBytes
	}
	return KindMessage
}
