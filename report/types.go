package report

import (
	"fmt"
	"os"
	"strings"

	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/schema"
)

// MaxSchemaFile bounds a --schema layout file (schema.MaxSchemaSize).
const MaxSchemaFile = schema.MaxSchemaSize

// ParseSchemaArg parses one --schema value, TOPIC=WHAT, where WHAT is a
// layout file (docs/schemas.md: the topic is a packed struct) or one of
// the well-known camera types foxglove.CompressedImage and
// foxglove.CompressedVideo. The layout is compiled here, so a bad one is
// an error naming the file, line and column.
func ParseSchemaArg(arg string) (topic string, t schema.Type, err error) {
	topic, what, ok := strings.Cut(arg, "=")
	if !ok || topic == "" || what == "" {
		return "", t, fmt.Errorf("%w: --schema %q: want TOPIC=LAYOUT_FILE or TOPIC=%s", ErrUsage, arg, media.SchemaCompressedImage)
	}
	switch what {
	case media.SchemaCompressedImage:
		return topic, schema.Type{MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{Name: what,
			Encoding: schema.SchemaProtobuf, Data: media.CompressedImageDescriptor()}}, nil
	case media.SchemaCompressedVideo:
		return topic, schema.Type{MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{Name: what,
			Encoding: schema.SchemaProtobuf, Data: media.CompressedVideoDescriptor()}}, nil
	}
	st, err := os.Stat(what)
	if err != nil {
		return "", t, fmt.Errorf("%w: --schema %s: %v", ErrUsage, arg, err)
	}
	if st.Size() > MaxSchemaFile {
		return "", t, fmt.Errorf("%w: --schema %s: %d bytes, more than %d (schema.MaxSchemaSize)", ErrUsage, what, st.Size(), MaxSchemaFile)
	}
	src, err := os.ReadFile(what)
	if err != nil {
		return "", t, fmt.Errorf("%w: --schema %s: %v", ErrUsage, arg, err)
	}
	if _, err := schema.ParseLayout(src); err != nil {
		return "", t, fmt.Errorf("%w: --schema %s: %s: %v", ErrUsage, topic, what, err)
	}
	name := strings.TrimSuffix(baseName(what), ".layout")
	return topic, schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: name,
		Encoding: schema.SchemaLayout, Data: src}}, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
