package schema

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestHugeSchemaRefusedUnread: a 100 MiB schema is refused by its size
// before any parser sees it, in well under a millisecond per call.
func TestHugeSchemaRefusedUnread(t *testing.T) {
	huge := make([]byte, 100<<20) // zero pages: never touched
	for _, typ := range []Type{
		{MessageEncoding: EncodingProtobuf, Schema: Schema{Name: "a.B", Encoding: SchemaProtobuf, Data: huge}},
		{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaLayout, Data: huge}},
		{MessageEncoding: EncodingJSON, Schema: Schema{Name: "a", Encoding: SchemaJSON, Data: huge}},
	} {
		start := time.Now()
		d, err := NewDecoder(typ)
		if d != nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "104857600 bytes") {
			t.Errorf("%s: NewDecoder = %v, %v; want ErrTooLarge naming the size", typ.MessageEncoding, d, err)
		}
		if el := time.Since(start); el > 100*time.Millisecond {
			t.Errorf("%s: refusing took %v", typ.MessageEncoding, el)
		}
	}
	if _, err := ParseLayout(huge); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ParseLayout: %v, want ErrTooLarge", err)
	}
}

func TestNoDecoder(t *testing.T) {
	for _, typ := range []Type{
		Raw("a"),
		{MessageEncoding: EncodingCDR, Schema: Schema{Name: "std_msgs/msg/String", Encoding: SchemaROS2Msg, Data: []byte("string data")}},
		{MessageEncoding: EncodingFlatbuffer, Schema: Schema{Name: "a.B", Encoding: SchemaFlatbuffer, Data: []byte{1}}},
		{MessageEncoding: EncodingROS1, Schema: Schema{Name: "std_msgs/String", Encoding: SchemaROS1Msg, Data: []byte("string data")}},
		{MessageEncoding: EncodingCBOR, Schema: Schema{}},
		{MessageEncoding: "x-acme", Schema: Schema{}},
	} {
		d, err := NewDecoder(typ)
		if d != nil || !errors.Is(err, ErrNoDecoder) || !strings.Contains(err.Error(), typ.MessageEncoding) {
			t.Errorf("%s: NewDecoder = %v, %v; want ErrNoDecoder naming the encoding", typ.MessageEncoding, d, err)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  Type
		want error
	}{
		{"raw", Raw("a"), nil},
		{"cdr passed through", Type{MessageEncoding: EncodingCDR, Schema: Schema{Name: "a/msg/B", Encoding: SchemaROS2Msg, Data: []byte("not parsed")}}, nil},
		{"layout", Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaLayout, Data: []byte("f32le speed")}}, nil},
		{"bad layout", Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaLayout, Data: []byte("f33le speed")}}, ErrInvalid},
		{"bad descriptor", Type{MessageEncoding: EncodingProtobuf, Schema: Schema{Name: "a.B", Encoding: SchemaProtobuf, Data: []byte{0xff, 0xff}}}, ErrInvalid},
		{"bad pairing", Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaNone, Data: nil}}, ErrInvalid},
		{"too large", Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaLayout, Data: make([]byte, MaxSchemaSize+1)}}, ErrTooLarge},
	} {
		err := Check(c.typ)
		if c.want == nil && err != nil || !errors.Is(err, c.want) {
			t.Errorf("%s: Check = %v, want %v", c.name, err, c.want)
		}
	}
	// The error of Validate matches both packages' sentinels.
	err := Check(Type{})
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, ingest.ErrInvalidType) {
		t.Errorf("Check(zero) = %v, want ErrInvalid and ingest.ErrInvalidType", err)
	}
}
