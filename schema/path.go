package schema

import "encoding/json"

// Path is a parsed field path (docs/schemas.md, "Field paths"): the way
// "cat --fields" and anything else outside this package names one value
// of a decoded message, "speed", "imu.accel[2]", `labels["front left"]`.
//
// A Path is immutable and safe for concurrent use.
type Path struct {
	elems []pathElem
	src   string
}

// ParsePath parses p; an error wraps ErrNoField and names the byte where p
// went wrong.
func ParsePath(p string) (Path, error) {
	elems, err := parsePath(p)
	if err != nil {
		return Path{}, err
	}
	return Path{elems: elems, src: p}, nil
}

// String is the path as it was written.
func (p Path) String() string { return p.src }

// LookupJSON returns the raw JSON value at p in doc (a JSON document, as a
// Decoder's AppendJSON writes it), a slice of doc; false when the path is
// not there, or doc is not valid JSON.
func (p Path) LookupJSON(doc []byte) ([]byte, bool) {
	if len(p.elems) == 0 || !json.Valid(doc) {
		return nil, false
	}
	w := jsonWalker{s: doc}
	return w.lookup(p.elems)
}
