package dumpinfo

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Bounds of Decode: a dump's information from a file is untrusted.
const (
	// MaxObjects bounds the JSON objects (topic accounts, triggers, their
	// parameters) a dump information may hold: twice 65536, well beyond a
	// recorder's topic table.
	MaxObjects = 1 << 17
	// MaxJSONSize bounds its JSON text.
	MaxJSONSize = 64 << 20
)

// ErrTooLarge: a dump information holds more than Decode accepts.
var ErrTooLarge = errors.New("dumpinfo: too large")

// Decode decodes an Info from its JSON (as stored by pack and MCAP) after
// checking, without decoding, that it holds at most MaxObjects objects in
// at most MaxJSONSize bytes: 3 bytes of "{}," would otherwise cost a
// hundred bytes of TopicAccount each. What an older writer left out is
// completed (Normalize).
func Decode(b []byte) (Info, error) {
	if len(b) > MaxJSONSize {
		return Info{}, fmt.Errorf("%w: %d bytes of JSON (limit %d)", ErrTooLarge, len(b), MaxJSONSize)
	}
	if n := countObjects(b); n > MaxObjects {
		return Info{}, fmt.Errorf("%w: more than %d JSON objects (topic accounts, triggers)", ErrTooLarge, MaxObjects)
	}
	var d Info
	if err := json.Unmarshal(b, &d); err != nil {
		return Info{}, err
	}
	d.Normalize()
	return d, nil
}

// countObjects counts the '{' of b outside JSON strings, stopping past
// MaxObjects.
func countObjects(b []byte) int {
	n, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && c == '{':
			if n++; n > MaxObjects {
				return n
			}
		}
	}
	return n
}
