package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// jnode is a JSON value with its object members in document order
// (encoding/json's maps lose the order, and Fields keeps the schema's).
type jnode struct {
	kind byte // '{' '[' '"' 'n' (number) 'b' (bool) '0' (null)
	str  string
	num  json.Number
	keys []string
	vals []*jnode
}

func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// maxJSONSchemaDepth bounds the nesting of a JSON Schema document: a level
// of the described message takes two or three levels of JSON.
const maxJSONSchemaDepth = 4 * MaxDepth

// parseJNode parses one JSON document iteratively, bounded in depth.
func parseJNode(data []byte) (*jnode, error) {
	if !json.Valid(data) {
		var v any
		return nil, json.Unmarshal(data, &v) // for the reason
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*jnode
	var root *jnode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		var n *jnode
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				n = &jnode{kind: byte(v)}
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			top := len(stack) - 1
			if top >= 0 && stack[top].kind == '{' && len(stack[top].keys) == len(stack[top].vals) {
				stack[top].keys = append(stack[top].keys, v)
				continue
			}
			n = &jnode{kind: '"', str: v}
		case json.Number:
			n = &jnode{kind: 'n', num: v}
		case bool:
			n = &jnode{kind: 'b'}
			if v {
				n.str = "true"
			}
		case nil:
			n = &jnode{kind: '0'}
		}
		if len(stack) == 0 {
			if root != nil {
				return nil, errors.New("more than one JSON value")
			}
			root = n
		} else {
			top := stack[len(stack)-1]
			top.vals = append(top.vals, n)
		}
		if n.kind == '{' || n.kind == '[' {
			if stack = append(stack, n); len(stack) > maxJSONSchemaDepth {
				return nil, fmt.Errorf("%w: JSON nests more than %d deep", ErrLimit, maxJSONSchemaDepth)
			}
		}
	}
	if root == nil || len(stack) > 0 {
		return nil, errors.New("unexpected end of JSON")
	}
	return root, nil
}

// jsonSchemaFields lists the leaves a JSON Schema describes: "properties"
// of objects in document order, "items" of arrays ("[]"; Dims from
// minItems = maxItems, else -1), "additionalProperties" schemas (".*"),
// local "$ref"s to "#/$defs/..." or "#/definitions/...". A part whose shape
// the schema does not say (no type, anyOf, a recursive $ref, MaxDepth deep)
// is one KindMessage field. A description "unit: X" gives the unit.
func jsonSchemaFields(data []byte) ([]Field, error) {
	root, err := parseJNode(data)
	if err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalid, err)
	}
	if root.kind != '{' {
		return nil, fmt.Errorf("%w: a JSON Schema is an object", ErrInvalid)
	}
	w := jsonSchemaWalk{root: root}
	if err := w.node(root, nil, nil, nil, 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

type jsonSchemaWalk struct {
	root   *jnode
	out    []Field
	visits int
}

func (w *jsonSchemaWalk) resolve(n *jnode, refs []string) (*jnode, []string, bool) {
	for range MaxDepth {
		ref := n.get("$ref")
		if ref == nil || ref.kind != '"' {
			return n, refs, true
		}
		if slices.Contains(refs, ref.str) {
			return n, refs, false // recursive
		}
		refs = append(refs[:len(refs):len(refs)], ref.str)
		var target *jnode
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			if name, ok := strings.CutPrefix(ref.str, prefix); ok {
				target = w.root.get(prefix[2 : len(prefix)-1]).get(name)
			}
		}
		if ref.str == "#" {
			target = w.root
		}
		if target == nil {
			return n, refs, false
		}
		n = target
	}
	return n, refs, false
}

func (w *jsonSchemaWalk) node(n *jnode, path []byte, dims []int, refs []string, depth int) error {
	if w.visits++; w.visits > MaxFields {
		return fmt.Errorf("%w: more than %d schema nodes (MaxFields)", ErrLimit, MaxFields)
	}
	f := Field{Path: string(path), Kind: KindMessage}
	if len(dims) > 0 {
		f.Dims = slices.Clone(dims)
	}
	n, refs, ok := w.resolve(n, refs)
	if d := n.get("description"); d != nil && d.kind == '"' {
		f.Unit, _ = strings.CutPrefix(d.str, "unit: ")
		if f.Unit == d.str {
			f.Unit = ""
		}
	}
	if t := n.get("title"); t != nil && t.kind == '"' {
		f.Type = t.str
	}
	typ := ""
	if t := n.get("type"); t != nil {
		switch t.kind {
		case '"':
			typ = t.str
		case '[':
			for _, v := range t.vals {
				if v.kind == '"' && v.str != "null" {
					typ = v.str
					break
				}
			}
		}
	}
	if typ == "" && n.get("properties") != nil {
		typ = "object"
	}
	if !ok || depth >= MaxDepth {
		typ = ""
	}
	switch typ {
	case "object":
		props := n.get("properties")
		if props != nil && props.kind == '{' {
			for i, k := range props.keys {
				if err := w.node(props.vals[i], appendPathKey(path, k), dims, refs, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if ap := n.get("additionalProperties"); ap != nil && ap.kind == '{' {
			return w.node(ap, append(path, ".*"...), dims, refs, depth+1)
		}
	case "array":
		if items := n.get("items"); items != nil && items.kind == '{' {
			d := -1
			lo, hi := n.get("minItems"), n.get("maxItems")
			if lo != nil && hi != nil && lo.kind == 'n' && lo.num == hi.num {
				if v, err := lo.num.Int64(); err == nil && v >= 0 && v <= MaxLayoutSize {
					d = int(v)
				}
			}
			return w.node(items, append(path, "[]"...), append(dims[:len(dims):len(dims)], d), refs, depth+1)
		}
	case "integer":
		f.Kind, f.Type = KindInt, typ
		if m := n.get("minimum"); m != nil && m.kind == 'n' && !strings.HasPrefix(string(m.num), "-") {
			f.Kind = KindUint
		}
	case "number":
		f.Kind, f.Type = KindFloat, typ
	case "boolean":
		f.Kind, f.Type = KindBool, typ
	case "string":
		f.Kind, f.Type = KindString, typ
		if e := n.get("contentEncoding"); e != nil && e.str == "base64" {
			f.Kind = KindBytes
		}
	case "null":
		return nil
	}
	if f.Path == "" { // the root is not an object
		return nil
	}
	w.out = append(w.out, f)
	return nil
}
