package schema

import (
	"math"
	"strconv"
)

// JSONDialect is the JSON Schema dialect JSONSchema declares.
const JSONDialect = "https://json-schema.org/draft/2020-12/schema"

// JSONSchema returns a JSON Schema (draft 2020-12, the subset Foxglove
// reads: type, properties, items, title, description, contentEncoding)
// of the JSON objects AppendJSON writes, so a writer can store a packed
// topic as MCAP message encoding "json" with schema encoding "jsonschema"
// and viewers plot its fields. Integers carry their range as minimum and
// maximum, fixed arrays minItems = maxItems, units a description
// "unit: m/s", bytes contentEncoding base64. title is the schema's title
// (the type name); "" leaves it out.
//
// Floats are declared "number"; a NaN or infinity, which AppendJSON
// writes as a string, does not validate against the schema.
func (l *Layout) JSONSchema(title string) []byte {
	b := []byte(`{"$schema":"` + JSONDialect + `"`)
	if title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, title)
	}
	b = append(b, ',')
	b = appendStructSchema(b, l.root)
	return append(b, '}')
}

// appendStructSchema appends the members of an object schema (no braces).
func appendStructSchema(b []byte, st *structType) []byte {
	b = append(b, `"type":"object","properties":{`...)
	first := true
	for _, m := range st.members {
		if m.node.kind == nPad {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, m.name)
		b = append(b, ':')
		b = appendNodeSchema(b, m.node, m.unit)
	}
	b = append(b, `},"required":[`...)
	first = true
	for _, m := range st.members {
		if m.node.kind == nPad {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, m.name)
	}
	return append(b, ']')
}

func appendNodeSchema(b []byte, nd *node, unit string) []byte {
	b = append(b, '{')
	switch nd.kind {
	case nScalar:
		switch nd.prim {
		case primBool:
			b = append(b, `"type":"boolean"`...)
		case primF32, primF64:
			b = append(b, `"type":"number"`...)
		default:
			lo, hi := intRange(nd.prim)
			b = append(b, `"type":"integer","minimum":`...)
			b = strconv.AppendInt(b, lo, 10)
			b = append(b, `,"maximum":`...)
			b = strconv.AppendUint(b, hi, 10)
		}
		if unit != "" {
			b = append(b, `,"description":`...)
			b = appendJSONString(b, "unit: "+unit)
		}
	case nChar:
		b = append(b, `"type":"string","maxLength":`...)
		b = strconv.AppendInt(b, int64(nd.n), 10)
	case nStr:
		b = append(b, `"type":"string"`...)
	case nBytes:
		b = append(b, `"type":"string","contentEncoding":"base64"`...)
	case nArray:
		b = append(b, `"type":"array","minItems":`...)
		b = strconv.AppendInt(b, int64(nd.n), 10)
		b = append(b, `,"maxItems":`...)
		b = strconv.AppendInt(b, int64(nd.n), 10)
		b = append(b, `,"items":`...)
		b = appendNodeSchema(b, nd.elem, unit)
	case nStruct:
		b = append(b, `"title":`...)
		b = appendJSONString(b, nd.st.name)
		b = append(b, ',')
		b = appendStructSchema(b, nd.st)
	}
	return append(b, '}')
}

func intRange(p prim) (int64, uint64) {
	bits := 8 * uint(primSize[p])
	switch p {
	case primI8, primI16, primI32, primI64:
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	return 0, math.MaxUint64 >> (64 - bits)
}
