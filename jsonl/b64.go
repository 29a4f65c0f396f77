package jsonl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
)

// b64Field is a message line's "data": base64 text decoded in place, in
// the line's own bytes, so that a long message costs its line and nothing
// more (encoding/json would copy the text into a string, or decode it
// into a new slice beside the line).
type b64Field struct {
	raw []byte // the JSON value as it is in the line
}

// UnmarshalJSON keeps the value's bytes: encoding/json hands over a slice
// of the line, which outlives the call (the line is Import's).
func (f *b64Field) UnmarshalJSON(b []byte) error {
	f.raw = b
	return nil
}

// errNotString: a "data" that is no JSON string.
var errNotString = errors.New("not a string")

// decode returns the data block: decoded in place over the value's bytes
// (which it overwrites) when the string has no escapes, else through
// encoding/json (a copy). Never nil for a string: "" is an empty block.
func (f *b64Field) decode() ([]byte, error) {
	b := f.raw
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, errNotString
	}
	text := b[1 : len(b)-1]
	if bytes.IndexByte(text, '\\') >= 0 { // escapes: let encoding/json unquote
		var out []byte
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		if out == nil {
			out = []byte{}
		}
		return out, nil
	}
	return decodeInPlace(text)
}

// decodeInPlace decodes standard base64 text into its own first bytes and
// returns them: block by block through a small buffer (the output of a
// block never reaches past its input, so nothing is overwritten before it
// is read), padding allowed in the last block only, as
// base64.StdEncoding.Decode would accept the whole text.
func decodeInPlace(text []byte) ([]byte, error) {
	const block = 4 << 10 // input bytes per step; a multiple of 4
	var tmp [block / 4 * 3]byte
	out := 0
	for in := 0; in < len(text); in += block {
		end := min(in+block, len(text))
		chunk := text[in:end]
		if end < len(text) && bytes.IndexByte(chunk, '=') >= 0 {
			return nil, base64.CorruptInputError(in + bytes.IndexByte(chunk, '='))
		}
		n, err := base64.StdEncoding.Decode(tmp[:], chunk)
		if err != nil {
			if ce, ok := err.(base64.CorruptInputError); ok {
				return nil, base64.CorruptInputError(int64(in) + int64(ce))
			}
			return nil, err
		}
		out += copy(text[out:], tmp[:n])
	}
	return text[:out:out], nil
}
