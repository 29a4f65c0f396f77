package schema

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHugeSchemaRefusedUnread: a 100 MiB schema is refused by its size
// before any parser sees it, in well under a millisecond per call.
func TestHugeSchemaRefusedUnread(t *testing.T) {
	huge := make([]byte, 100<<20) // zero pages: never touched
	for _, typ := range []Type{
		{EncodingProtobuf, Schema{"a.B", SchemaProtobuf, huge}},
		{EncodingPacked, Schema{"a", SchemaLayout, huge}},
		{EncodingJSON, Schema{"a", SchemaJSON, huge}},
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
		{EncodingCDR, Schema{"std_msgs/msg/String", SchemaROS2Msg, []byte("string data")}},
		{EncodingFlatbuffer, Schema{"a.B", SchemaFlatbuffer, []byte{1}}},
		{EncodingROS1, Schema{"std_msgs/String", SchemaROS1Msg, []byte("string data")}},
		{EncodingCBOR, Schema{}},
		{"x-acme", Schema{}},
	} {
		d, err := NewDecoder(typ)
		if d != nil || !errors.Is(err, ErrNoDecoder) || !strings.Contains(err.Error(), typ.MessageEncoding) {
			t.Errorf("%s: NewDecoder = %v, %v; want ErrNoDecoder naming the encoding", typ.MessageEncoding, d, err)
		}
	}
}
