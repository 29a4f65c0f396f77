package schema

import (
	"fmt"
	"strconv"
)

// Kind is what a leaf field holds.
type Kind uint8

// Kinds of leaf fields.
const (
	KindInvalid Kind = iota
	KindBool         // true/false; 1/0 in Numeric
	KindInt          // signed integer
	KindUint         // unsigned integer
	KindFloat        // IEEE 754 binary32 or binary64
	KindEnum         // protobuf enum: its number in Numeric, its name in JSON
	KindString       // text
	KindBytes        // opaque bytes (base64 in JSON)
	// KindMessage is a sub-message Fields does not expand: its type recurses
	// (google.protobuf.Struct, a tree node), it sits MaxDepth deep, or a JSON
	// Schema does not say its shape. Numeric still walks what a message
	// holds there.
	KindMessage
)

var kindNames = [...]string{"invalid", "bool", "int", "uint", "float", "enum", "string", "bytes", "message"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Numeric reports whether Numeric reports values of this kind (bool, int,
// uint, float, enum).
func (k Kind) Numeric() bool { return k >= KindBool && k <= KindEnum }

// Field is a leaf field a schema declares.
//
// Path uses the field path syntax (docs/schemas.md, "Field paths") with
// "[]" for any index of an array and ".*" for any key of a map:
// "wheel[]", "poses[].x", "labels.*". Numeric reports concrete paths
// ("wheel[2]", "labels.front").
type Field struct {
	Path string
	Kind Kind
	// Type is the schema's own name for the type: "f32le", "char[16]",
	// "double", "sint32", an enum's or message's full name.
	Type string
	Unit string // declared unit ("m/s"), "" when none
	// Dims holds the length of each "[]" in Path, in order; -1 where each
	// message says (protobuf repeated fields, JSON arrays).
	Dims []int
}

// pathElem is one step of a parsed field path: a member name or an index.
type pathElem struct {
	name    string
	index   int
	isIndex bool
}

// parsePath parses a field path:
//
//	path  = first { "." ident | "[" index "]" | "[" string "]" }
//	first = ident | "[" string "]"
//
// ident is [A-Za-z_][A-Za-z0-9_]*, index decimal digits, string a JSON
// string literal (for member names that are not identifiers).
func parsePath(p string) ([]pathElem, error) {
	bad := func(i int, what string) error {
		return fmt.Errorf("%w: path %q: %s at byte %d", ErrNoField, p, what, i)
	}
	if len(p) > maxNameLen {
		return nil, fmt.Errorf("%w: path of %d bytes", ErrNoField, len(p))
	}
	var out []pathElem
	i := 0
	for i < len(p) {
		switch {
		case p[i] == '[':
			j := i + 1
			if j < len(p) && p[j] == '"' {
				k, name, ok := scanJSONString(p, j)
				if !ok || k >= len(p) || p[k] != ']' {
					return nil, bad(i, `bad ["name"]`)
				}
				out = append(out, pathElem{name: name})
				i = k + 1
				continue
			}
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				j++
			}
			if j == i+1 || j >= len(p) || p[j] != ']' || j-i-1 > 9 {
				return nil, bad(i, "bad index")
			}
			n, _ := strconv.Atoi(p[i+1 : j])
			out = append(out, pathElem{index: n, isIndex: true})
			i = j + 1
		case p[i] == '.' && len(out) > 0:
			i++
			fallthrough
		case len(out) == 0:
			j := i
			for j < len(p) && isIdentByte(p[j], j == i) {
				j++
			}
			if j == i {
				return nil, bad(i, "want a field name")
			}
			out = append(out, pathElem{name: p[i:j]})
			i = j
		default:
			return nil, bad(i, "want . or [")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty path", ErrNoField)
	}
	return out, nil
}

func isIdentByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

func isIdent[S string | []byte](s S) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

// scanJSONString reads the JSON string literal starting at p[i] == '"' and
// returns the index after it and its value.
func scanJSONString(p string, i int) (int, string, bool) {
	j := i + 1
	for j < len(p) && p[j] != '"' {
		if p[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p) {
		return 0, "", false
	}
	s, ok := unquoteJSON([]byte(p[i : j+1]))
	return j + 1, s, ok
}

// appendPathKey appends a member name to a path: ".name", or "name" at the
// start, or `["name"]` when it is not an identifier.
func appendPathKey[S string | []byte](path []byte, name S) []byte {
	if isIdent(name) {
		if len(path) > 0 {
			path = append(path, '.')
		}
		return append(path, name...)
	}
	path = append(path, '[')
	path = appendJSONString(path, name)
	return append(path, ']')
}

// appendPathIndex appends "[i]".
func appendPathIndex(path []byte, i int) []byte {
	path = append(path, '[')
	path = strconv.AppendInt(path, int64(i), 10)
	return append(path, ']')
}
