package schema

import "github.com/edr-lite/edr-lite/ingest"

// AsJSON returns the type a viewer such as Foxglove reads a topic of type t
// as, and how to get there: a packed struct (x-edr-packed) becomes message
// encoding json with its layout's JSON Schema (JSONSchema, titled with the
// type name) and l, the compiled layout whose AppendJSON transcodes each
// message; every other type is returned as it is, with a nil l. A layout
// that does not compile is an error (the topic is then offered as it was
// recorded). The MCAP export and the live server both call it, so a packed
// topic plots the same in a file and live.
func AsJSON(t Type) (out Type, l *Layout, err error) {
	if t.MessageEncoding != ingest.EncodingPacked {
		return t, nil, nil
	}
	l, err = ParseLayout(t.Schema.Data)
	if err != nil {
		return t, nil, err
	}
	name := t.Schema.Name
	return Type{MessageEncoding: ingest.EncodingJSON,
		Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaJSON, Data: l.JSONSchema(name)}}, l, nil
}
