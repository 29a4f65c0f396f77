package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonDecoder reads JSON messages as they are; a JSON Schema, when there is
// one, only gives Fields.
type jsonDecoder struct {
	fields []Field
}

func newJSON(s Schema) (*jsonDecoder, error) {
	d := &jsonDecoder{}
	if s.Encoding == SchemaJSON {
		f, err := jsonSchemaFields(s.Data)
		if err != nil {
			return nil, fmt.Errorf("json schema %q: %w", s.Name, err)
		}
		d.fields = f
	}
	return d, nil
}

func (d *jsonDecoder) Fields() []Field { return d.fields }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// checkObject: msg is valid JSON, an object, nested at most MaxDepth deep.
func checkObject(msg []byte) error {
	if i := skipSpace(msg, 0); i == len(msg) || msg[i] != '{' {
		return fmt.Errorf("%w: json: not an object", ErrBadMessage)
	}
	if !json.Valid(msg) {
		var v any
		err := json.Unmarshal(msg, &v) // for the reason
		return fmt.Errorf("%w: json: %v", ErrBadMessage, err)
	}
	depth, maxDepth, inString := 0, 0, false
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			maxDepth = max(maxDepth, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	if maxDepth > MaxDepth {
		return fmt.Errorf("%w: json nests %d deep, limit %d (MaxDepth)", ErrTooDeep, maxDepth, MaxDepth)
	}
	return nil
}

// AppendJSON appends the message compacted onto one line; it must be a
// JSON object.
func (d *jsonDecoder) AppendJSON(dst, msg []byte) ([]byte, error) {
	if i := skipSpace(msg, 0); i == len(msg) || msg[i] != '{' {
		return dst, fmt.Errorf("%w: json: not an object", ErrBadMessage)
	}
	n := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, msg); err != nil {
		return dst[:n], fmt.Errorf("%w: json: %v", ErrBadMessage, err)
	}
	return buf.Bytes(), nil
}

// Numeric reports numbers and booleans (1/0) by path: members as
// "a.b" (or a["not an identifier"]), array elements as "a[0]". Strings,
// including "NaN", are not numbers here.
func (d *jsonDecoder) Numeric(msg []byte, fn func(path []byte, v float64)) error {
	if err := checkObject(msg); err != nil {
		return err
	}
	pb := pathBufs.Get().(*[]byte)
	w := jsonWalker{s: msg}
	path := w.value((*pb)[:0], fn)
	*pb = path[:0]
	pathBufs.Put(pb)
	return nil
}

// jsonWalker walks JSON that json.Valid accepted.
type jsonWalker struct {
	s []byte
	i int
}

func (w *jsonWalker) value(path []byte, fn func([]byte, float64)) []byte {
	w.i = skipSpace(w.s, w.i)
	n := len(path)
	switch c := w.s[w.i]; c {
	case '{':
		w.i++
		for {
			w.i = skipSpace(w.s, w.i)
			if w.s[w.i] == ',' {
				w.i = skipSpace(w.s, w.i+1)
			}
			if w.s[w.i] == '}' {
				w.i++
				return path[:n]
			}
			start := w.i
			w.skipString()
			key := w.s[start:w.i]
			if bytes.IndexByte(key, '\\') < 0 {
				path = appendPathKey(path[:n], key[1:len(key)-1])
			} else {
				k, _ := unquoteJSON(key)
				path = appendPathKey(path[:n], k)
			}
			w.i = skipSpace(w.s, w.i) + 1 // ':'
			path = w.value(path, fn)
		}
	case '[':
		w.i++
		for j := 0; ; j++ {
			w.i = skipSpace(w.s, w.i)
			if w.s[w.i] == ',' {
				w.i = skipSpace(w.s, w.i+1)
			}
			if w.s[w.i] == ']' {
				w.i++
				return path[:n]
			}
			path = w.value(appendPathIndex(path[:n], j), fn)
		}
	case '"':
		w.skipString()
	case 't':
		w.i += 4
		fn(path, 1)
	case 'f':
		w.i += 5
		fn(path, 0)
	case 'n':
		w.i += 4
	default:
		start := w.i
		for w.i < len(w.s) && isNumberByte(w.s[w.i]) {
			w.i++
		}
		v, _ := strconv.ParseFloat(string(w.s[start:w.i]), 64) // valid JSON: only range errors (±Inf)
		fn(path, v)
	}
	return path[:n]
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// skipString moves past the string literal at w.i.
func (w *jsonWalker) skipString() {
	w.i++
	for w.s[w.i] != '"' {
		if w.s[w.i] == '\\' {
			w.i++
		}
		w.i++
	}
	w.i++
}

// skipValue moves past the value at w.i.
func (w *jsonWalker) skipValue() {
	w.i = skipSpace(w.s, w.i)
	switch w.s[w.i] {
	case '"':
		w.skipString()
		return
	case '{', '[':
		depth := 0
		for {
			switch w.s[w.i] {
			case '"':
				w.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.i++
			if depth == 0 {
				return
			}
		}
	}
	for w.i < len(w.s) && strings.IndexByte(",]} \t\r\n", w.s[w.i]) < 0 {
		w.i++
	}
}

// lookup returns the raw value at the parsed path, in JSON that json.Valid
// accepted; false when the path is not there.
func (w *jsonWalker) lookup(elems []pathElem) ([]byte, bool) {
	w.i = 0
	for _, e := range elems {
		w.i = skipSpace(w.s, w.i)
		switch {
		case !e.isIndex && w.s[w.i] == '{':
			w.i++
			found := false
			for !found {
				w.i = skipSpace(w.s, w.i)
				if w.s[w.i] == ',' {
					w.i = skipSpace(w.s, w.i+1)
				}
				if w.s[w.i] == '}' {
					return nil, false
				}
				start := w.i
				w.skipString()
				key := w.s[start:w.i]
				if bytes.IndexByte(key, '\\') < 0 {
					found = string(key[1:len(key)-1]) == e.name
				} else {
					k, _ := unquoteJSON(key)
					found = k == e.name
				}
				w.i = skipSpace(w.s, w.i) + 1 // ':'
				if !found {
					w.skipValue()
				}
			}
		case e.isIndex && w.s[w.i] == '[':
			w.i++
			for j := 0; ; j++ {
				w.i = skipSpace(w.s, w.i)
				if w.s[w.i] == ',' {
					w.i = skipSpace(w.s, w.i+1)
				}
				if w.s[w.i] == ']' {
					return nil, false
				}
				if j == e.index {
					break
				}
				w.skipValue()
			}
		default:
			return nil, false
		}
	}
	w.i = skipSpace(w.s, w.i)
	start := w.i
	w.skipValue()
	return w.s[start:w.i], true
}
