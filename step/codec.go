package step

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// Codec turns a step's input or output into a message of its topic and
// back, and says the topic's type (message encoding and schema), which the
// recording declares so that "edr-lite info" shows it and "cat --decode"
// decodes it.
//
// Append must not keep v nor dst; Decode must not keep data (it aliases a
// dump's mapping). A Codec is used from several goroutines at once (loops
// recorded concurrently): the ones of this package are immutable.
type Codec[T any] interface {
	// Type is the topic's type.
	Type() ingest.Type
	// Append appends v's message to dst.
	Append(dst []byte, v T) ([]byte, error)
	// Decode decodes a message into v (a zero value or one to overwrite).
	Decode(data []byte, v *T) error
}

// JSON returns the Codec of values encoding/json encodes: message encoding
// "json", no schema, the type named name (a name a reader recognises,
// "planner.Brake"). Append costs what json.Marshal costs (it allocates).
func JSON[T any](name string) Codec[T] {
	return jsonCodec[T]{typ: ingest.Type{
		MessageEncoding: ingest.EncodingJSON, Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaNone}}}
}

type jsonCodec[T any] struct{ typ ingest.Type }

func (c jsonCodec[T]) Type() ingest.Type { return c.typ }

func (c jsonCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (c jsonCodec[T]) Decode(data []byte, v *T) error { return json.Unmarshal(data, v) }

// Protobuf returns the Codec of protobuf messages of prototype's type
// (a generated message, &pb.Brake{}, or a dynamicpb message): message
// encoding "protobuf", the schema the FileDescriptorSet of its file and
// every file it imports, named by the message's full name. Messages are
// marshalled deterministically (map entries sorted), so the same value
// gives the same bytes run after run. Decode allocates a new message.
func Protobuf[T proto.Message](prototype T) (Codec[T], error) {
	mt := prototype.ProtoReflect().Type()
	desc := mt.Descriptor()
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(desc.ParentFile())
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("%w: protobuf %s: %v", ErrCodec, desc.FullName(), err)
	}
	t := ingest.Type{MessageEncoding: ingest.EncodingProtobuf,
		Schema: ingest.Schema{Name: string(desc.FullName()), Encoding: ingest.SchemaProtobuf, Data: data}}
	if err := schema.Check(t); err != nil {
		return nil, fmt.Errorf("%w: protobuf %s: %v", ErrCodec, desc.FullName(), err)
	}
	return protoCodec[T]{typ: t, mt: mt}, nil
}

type protoCodec[T proto.Message] struct {
	typ ingest.Type
	mt  protoreflect.MessageType
}

func (c protoCodec[T]) Type() ingest.Type { return c.typ }

func (c protoCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, v)
}

func (c protoCodec[T]) Decode(data []byte, v *T) error {
	m, ok := c.mt.New().Interface().(T)
	if !ok {
		return fmt.Errorf("%w: protobuf %s: not a %T", ErrCodec, c.typ.Schema.Name, *v)
	}
	if err := proto.Unmarshal(data, m); err != nil {
		return err
	}
	*v = m
	return nil
}

// Bytes returns the Codec of opaque payloads: the bytes as they are,
// typed raw bytes named name (ingest.Raw). Decode copies.
func Bytes(name string) Codec[[]byte] { return bytesCodec{typ: ingest.Raw(name)} }

type bytesCodec struct{ typ ingest.Type }

func (c bytesCodec) Type() ingest.Type                           { return c.typ }
func (c bytesCodec) Append(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }
func (c bytesCodec) Decode(data []byte, v *[]byte) error {
	*v = append((*v)[:0], data...)
	return nil
}
