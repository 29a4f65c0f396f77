package schema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestJSONDecoder(t *testing.T) {
	d, err := NewDecoder(Type{MessageEncoding: EncodingJSON})
	if err != nil {
		t.Fatal(err)
	}
	if d.Fields() != nil {
		t.Errorf("Fields without a schema: %v", d.Fields())
	}
	msg := []byte(`{
	  "header": {"stamp": {"sec": 1796169600, "nsec": 5}, "frame_id": "map"},
	  "speed": 12.5, "ok": true, "off": false, "none": null,
	  "wheel": [1, -2e3, {"x": 0.5}, [7]],
	  "a b": {"c\"d": 1, "\u00fc": 2},
	  "big": 18446744073709551615, "text": "NaN"
	}`)
	var got []string
	if err := d.Numeric(msg, func(p []byte, v float64) { got = append(got, fmt.Sprintf("%s=%v", p, v)) }); err != nil {
		t.Fatal(err)
	}
	want := `header.stamp.sec=1.7961696e+09 header.stamp.nsec=5 speed=12.5 ok=1 off=0 wheel[0]=1 wheel[1]=-2000 ` +
		`wheel[2].x=0.5 wheel[3][0]=7 ["a b"]["c\"d"]=1 ["a b"]["ü"]=2 big=1.8446744073709552e+19`
	if strings.Join(got, " ") != want {
		t.Errorf("Numeric:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	js, err := d.AppendJSON([]byte("> "), msg)
	if err != nil || strings.ContainsAny(string(js), "\n\t") || !strings.HasPrefix(string(js), `> {"header":{"stamp":`) {
		t.Errorf("AppendJSON: %s %v", js, err)
	}
	for _, bad := range []string{`[1,2]`, `"x"`, `{"a":`, `{"a":1}{`, ``, `  `, `{"a":1,}`, strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65)} {
		out, err := d.AppendJSON([]byte("x"), []byte(bad))
		errN := d.Numeric([]byte(bad), func([]byte, float64) { t.Errorf("callback for %.20q", bad) })
		deep := strings.HasPrefix(bad, `{"a":{`)
		if !deep && (!errors.Is(err, ErrBadMessage) || string(out) != "x") || errN == nil ||
			deep && !errors.Is(errN, ErrTooDeep) {
			t.Errorf("%.20q: AppendJSON %q %v; Numeric %v", bad, out, err, errN)
		}
	}
}

func TestJSONSchemaFields(t *testing.T) {
	schema := `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "title": "foxglove.PoseInFrame",
	  "type": "object",
	  "$defs": {"vec": {"type": "object", "title": "Vec", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}},
	            "tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}}}},
	  "properties": {
	    "timestamp": {"type": "object", "title": "time", "properties": {"sec": {"type": "integer", "minimum": 0}, "nsec": {"type": "integer", "minimum": 0}}},
	    "frame_id": {"type": "string"},
	    "pos": {"$ref": "#/$defs/vec"},
	    "speed": {"type": ["number", "null"], "description": "unit: m/s"},
	    "offset": {"type": "integer", "minimum": -5},
	    "data": {"type": "string", "contentEncoding": "base64"},
	    "ranges": {"type": "array", "items": {"type": "number"}},
	    "wheel": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "integer"}},
	    "labels": {"type": "object", "additionalProperties": {"type": "number"}},
	    "tree": {"$ref": "#/$defs/tree"},
	    "any": {"anyOf": [{"type": "number"}, {"type": "string"}]},
	    "ok": {"type": "boolean"},
	    "nothing": {"type": "null"}
	  }
	}`
	d, err := NewDecoder(Type{MessageEncoding: EncodingJSON, Schema: Schema{Name: "foxglove.PoseInFrame", Encoding: SchemaJSON, Data: []byte(schema)}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.Fields() {
		got = append(got, fmt.Sprintf("%s:%s:%s:%s:%v", f.Path, f.Kind, f.Type, f.Unit, f.Dims))
	}
	want := "timestamp.sec:uint:integer::[] timestamp.nsec:uint:integer::[] frame_id:string:string::[] pos.x:float:number::[] " +
		"pos.y:float:number::[] speed:float:number:m/s:[] offset:int:integer::[] data:bytes:string::[] ranges[]:float:number::[-1] " +
		"wheel[]:int:integer::[4] labels.*:float:number::[] tree.kids[]:message:::[-1] any:message:::[] ok:bool:boolean::[]"
	if strings.Join(got, " ") != want {
		t.Errorf("Fields:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, bad := range []string{`{`, `[]`, `{"a":1} {}`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if _, err := NewDecoder(Type{MessageEncoding: EncodingJSON, Schema: Schema{Name: "x", Encoding: SchemaJSON, Data: []byte(bad)}}); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrLimit) {
			t.Errorf("schema %.20q: %v", bad, err)
		}
	}
}
