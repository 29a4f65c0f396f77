package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// TypeKeys give topics a type (message encoding and schema, see
// docs/schemas.md): in [[topic]] (overriding what a producer or listener
// declared), [[source.udp]] and [[source.raw]] (every topic of the
// listener).
//
//	layout = "f32le speed (m/s); u8 gear"     # a packed struct: x-edr-packed
//	schema_name = "vehicle.Speed"
//
//	encoding = "protobuf"                      # or json, cdr, ros1, flatbuffer, cbor, x-edr-raw, x-...
//	schema_name = "foxglove.CompressedImage"   # the message the descriptor set defines
//	schema_file = "schemas/foxglove.binpb"     # relative to the configuration file
//	schema_encoding = ""                       # default from encoding: protobuf, jsonschema (json with a file), ros2msg (cdr), ...
//
// schema_name alone names the type without declaring an encoding (raw
// bytes with that name). Parse reads schema_file and checks the type as
// the recorder will (schema.Check: layouts compile, descriptor sets build
// and hold schema_name, JSON Schemas parse); Type holds the result.
type TypeKeys struct {
	Encoding       string `toml:"encoding"`
	SchemaName     string `toml:"schema_name"`
	SchemaEncoding string `toml:"schema_encoding"`
	SchemaFile     string `toml:"schema_file"`
	Layout         string `toml:"layout"`
	// EventTime names the field of the schema that holds the time a
	// message describes (a field path: "stamp", "header.stamp"), with
	// its unit (schema.UnitNs ... schema.UnitStamp; "" for a packed field
	// that declares its unit). Dumps write the topic in that order
	// (dump.EventOrder). With a type in the same table the path is
	// checked against it here; otherwise against the type the topic
	// declares, when it is discovered.
	EventTime     string `toml:"event_time"`
	EventTimeUnit string `toml:"event_time_unit"`

	// Type is the type the keys give (zero when none), set by Parse.
	Type ingest.Type `toml:"-"`
}

// defaultSchemaEncoding is the schema encoding an encoding takes when the
// configuration does not say (withData: a schema_file is given).
func defaultSchemaEncoding(enc string, withData bool) string {
	switch enc {
	case ingest.EncodingProtobuf:
		return ingest.SchemaProtobuf
	case ingest.EncodingJSON:
		if withData {
			return ingest.SchemaJSON
		}
	case ingest.EncodingPacked:
		return ingest.SchemaLayout
	case ingest.EncodingCDR:
		return ingest.SchemaROS2Msg
	case ingest.EncodingROS1:
		return ingest.SchemaROS1Msg
	case ingest.EncodingFlatbuffer:
		return ingest.SchemaFlatbuffer
	}
	return ingest.SchemaNone
}

// resolve builds and checks the type the keys give; dir is the directory
// schema_file is relative to. The error names the key at fault.
func (k *TypeKeys) resolve(dir string) (key string, err error) {
	if key, err = k.resolveType(dir); err != nil || k.EventTime == "" && k.EventTimeUnit == "" {
		return key, err
	}
	if k.EventTime == "" {
		return "event_time_unit", errors.New("event_time_unit without event_time: name the field")
	}
	if err := schema.CheckEventTimeUnit(k.EventTimeUnit); err != nil {
		return "event_time_unit", err
	}
	if k.Type.MessageEncoding != "" && k.Type.MessageEncoding != ingest.EncodingRaw {
		if _, err := schema.NewEventTime(k.Type, k.EventTime, k.EventTimeUnit); err != nil {
			return "event_time", err
		}
	}
	return "", nil
}

// resolveType is resolve for the type keys.
func (k *TypeKeys) resolveType(dir string) (key string, err error) {
	if k.Encoding == "" && k.SchemaName == "" && k.SchemaEncoding == "" && k.SchemaFile == "" && k.Layout == "" {
		return "", nil
	}
	var t ingest.Type
	switch {
	case k.Layout != "":
		if k.Encoding != "" && k.Encoding != ingest.EncodingPacked {
			return "encoding", fmt.Errorf("encoding = %q with a layout: a layout is %q", k.Encoding, ingest.EncodingPacked)
		}
		if k.SchemaFile != "" || k.SchemaEncoding != "" && k.SchemaEncoding != ingest.SchemaLayout {
			return "layout", errors.New("layout gives the schema: leave schema_file and schema_encoding out")
		}
		if _, err := schema.ParseLayout([]byte(k.Layout)); err != nil {
			return "layout", err // "layout:LINE:COL: what"
		}
		t = ingest.Packed(k.SchemaName, k.Layout)
	case k.Encoding == "":
		if k.SchemaFile != "" || k.SchemaEncoding != "" {
			key = "schema_file"
			if k.SchemaFile == "" {
				key = "schema_encoding"
			}
			return key, errors.New("a schema needs an encoding (encoding = protobuf, json, cdr, ...)")
		}
		t = ingest.Named(k.SchemaName)
		k.Type = t
		return "", nil
	default:
		t = ingest.Type{MessageEncoding: k.Encoding, Schema: ingest.Schema{Name: k.SchemaName, Encoding: k.SchemaEncoding}}
		if k.SchemaFile != "" {
			p := k.SchemaFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			fi, err := os.Stat(p)
			if err != nil {
				return "schema_file", err
			}
			if fi.Size() > ingest.MaxSchemaSize {
				return "schema_file", fmt.Errorf("%s is %d bytes, more than %d (MaxSchemaSize)", p, fi.Size(), ingest.MaxSchemaSize)
			}
			if t.Schema.Data, err = os.ReadFile(p); err != nil {
				return "schema_file", err
			}
		}
		if t.Schema.Encoding == "" {
			t.Schema.Encoding = defaultSchemaEncoding(k.Encoding, len(t.Schema.Data) > 0)
		}
	}
	if err := schema.Check(t); err != nil {
		key = "encoding"
		switch {
		case k.Layout != "":
			key = "layout"
		case k.SchemaFile != "" && !errors.Is(err, ingest.ErrInvalidType):
			key = "schema_file"
		}
		return key, err
	}
	k.Type = t
	return "", nil
}

// resolveTypes resolves the type keys of every [[topic]], [[source.udp]]
// and [[source.raw]]: one problem per table at fault, naming the line of
// the key and, for a layout, the layout's own line and column.
func (f *File) resolveTypes(name string, data []byte) Errors {
	dir := filepath.Dir(name)
	var ps Errors
	check := func(table string, i int, k *TypeKeys) {
		key, err := k.resolve(dir)
		if err == nil {
			return
		}
		ps = append(ps, &Problem{File: name, Line: lineOfTableKey(data, table, i, key),
			Key: fmt.Sprintf("%s[%d].%s", table, i, key), Msg: err.Error()})
	}
	for i := range f.Topics {
		check("topic", i, &f.Topics[i].TypeKeys)
	}
	for i := range f.Sources.UDP {
		check("source.udp", i, &f.Sources.UDP[i].TypeKeys)
	}
	for i := range f.Sources.Raw {
		check("source.raw", i, &f.Sources.Raw[i].TypeKeys)
	}
	return ps
}

// lineOfTableKey finds the line where key is assigned in the index-th
// [[table]] of data (0 when not found: the file:0 form still names the
// file and the key's path).
func lineOfTableKey(data []byte, table string, index int, key string) int {
	hdr := regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?`)
	re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	n := -1
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		if m := hdr.FindStringSubmatch(line); m != nil {
			in = false
			if m[1] == table && strings.HasPrefix(strings.TrimSpace(line), "[[") {
				n++
				in = n == index
			}
			continue
		}
		if in && re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}
