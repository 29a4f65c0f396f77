package dumpfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// ErrRaw is returned by Decoder for a message of a topic without a schema
// to decode it by (raw bytes, whatever its type's name): its data is all
// there is.
var ErrRaw = errors.New("dumpfile: raw bytes: the topic has no schema to decode by")

// Decoder decodes the messages of dumps by their types (package schema:
// packed structs by their layout, protobuf by its descriptor set, JSON as
// it is; docs/schemas.md): as JSON, or one field by path. It builds one
// schema decoder per distinct type, on that type's first message, and
// keeps it: a Message's Type is the same pointer for every message of a
// topic until its type changes. "edr-lite cat --decode" decodes through
// it.
//
// A Decoder is not safe for concurrent use; what it returns is valid
// until its next call.
type Decoder struct {
	byPtr   map[*ingest.Type]*decoderEntry
	byID    map[ingest.ContentID]*decoderEntry
	getters map[getterKey]getterEntry
	buf     []byte
	line    bytes.Buffer
}

type decoderEntry struct {
	dec schema.Decoder // nil: not decoded, err says why
	err error
}

type getterKey struct {
	en   *decoderEntry
	path string
}

type getterEntry struct {
	g   *schema.Getter
	err error
}

// maxTypePointers bounds byPtr, should a reader hand out a *Type per
// message: past it, types are found by content ID (a hash of the schema).
const maxTypePointers = 4096

// maxGetters bounds the field getters a Decoder keeps (types × paths).
const maxGetters = 4096

// NewDecoder returns a Decoder with nothing built yet.
func NewDecoder() *Decoder {
	return &Decoder{byPtr: map[*ingest.Type]*decoderEntry{}, byID: map[ingest.ContentID]*decoderEntry{},
		getters: map[getterKey]getterEntry{}}
}

// entry is the decoder of t, built once per distinct type.
func (d *Decoder) entry(t *ingest.Type) *decoderEntry {
	if en, ok := d.byPtr[t]; ok {
		return en
	}
	id := t.ID()
	en, ok := d.byID[id]
	if !ok {
		en = &decoderEntry{err: ErrRaw}
		if t.MessageEncoding != ingest.EncodingRaw && !t.IsZero() {
			dec, err := schema.NewDecoder(*t)
			switch {
			case err == nil:
				en.dec, en.err = dec, nil
			case errors.Is(err, schema.ErrNoDecoder):
				en.err = &notDecoded{t.MessageEncoding + " messages are not decoded", err}
			default:
				en.err = fmt.Errorf("schema %q does not build: %w", t.Schema.Name, err)
			}
		}
		d.byID[id] = en
	}
	if len(d.byPtr) < maxTypePointers {
		d.byPtr[t] = en
	}
	return en
}

// JSON returns the message data of type t decoded as one line of JSON
// (compact: protobuf's JSON spacing varies between builds). The error is
// ErrRaw for a topic without a schema, else it says why the message does
// not decode (its encoding is not decoded here, its schema does not
// build, the data does not match it).
func (d *Decoder) JSON(t *ingest.Type, data []byte) ([]byte, error) {
	en := d.entry(t)
	if en.dec == nil {
		return nil, en.err
	}
	out, err := en.dec.AppendJSON(d.buf[:0], data)
	if err != nil {
		return nil, err
	}
	d.buf = out
	d.line.Reset()
	if err := json.Compact(&d.line, out); err != nil {
		return nil, fmt.Errorf("decoded to invalid JSON: %w", err)
	}
	return d.line.Bytes(), nil
}

// Field reads one leaf field (a number, bool, enum, string or bytes) of
// the message data of type t by path ("speed", "imu.accel[2]"; the
// syntax of docs/schemas.md) through schema.Getter: without decoding the
// whole message, and without allocating for packed structs. ok is false
// when the message does not hold the field (too short, absent); the error
// says why the path cannot be read in this type at all (ErrRaw, no such
// field, a protobuf leaf that is not a number). Value.Bytes aliases data.
func (d *Decoder) Field(t *ingest.Type, data []byte, path string) (v schema.Value, ok bool, err error) {
	en := d.entry(t)
	if en.dec == nil {
		return schema.Value{}, false, en.err
	}
	k := getterKey{en, path}
	ge, seen := d.getters[k]
	if !seen {
		ge.g, ge.err = schema.NewGetter(en.dec, path)
		if len(d.getters) < maxGetters {
			d.getters[k] = ge
		}
	}
	if ge.err != nil {
		return schema.Value{}, false, ge.err
	}
	v, ok = ge.g.Get(data)
	return v, ok, nil
}

// notDecoded says a message encoding is not decoded, wrapping
// schema.ErrNoDecoder without repeating it.
type notDecoded struct {
	msg string
	err error
}

func (e *notDecoded) Error() string { return e.msg }
func (e *notDecoded) Unwrap() error { return e.err }
