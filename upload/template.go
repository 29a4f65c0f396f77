package upload

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// templateFields are the {fields} a key template may use:
//
//	{prefix}   Options.Prefix
//	{vehicle}  Options.Vehicle
//	{date}     the dump's UTC date, YYYY-MM-DD (from its trigger time)
//	{year} {month} {day} {hour}   the same, in parts
//	{file}     the dump's file name, "20261202T133222.052888804Z_hard-brake_1.pack"
//	{name}     the file name without its extension
//	{table}    Parquet keys only: the table ("messages", "dumps", a schema name)
var templateFields = []string{"prefix", "vehicle", "date", "year", "month", "day", "hour", "file", "name", "table"}

// Template is a parsed key template.
type Template struct {
	src   string
	parts []tmplPart
}

type tmplPart struct {
	lit   string
	field string // "" for a literal
}

// ParseTemplate parses an object key template: text with {field}s (see
// templateFields). It must use {file} or {name}, so two dumps never share
// a key.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{src: s}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			t.parts = append(t.parts, tmplPart{lit: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("key template %q: { without }", s)
		}
		f := rest[i+1 : i+j]
		known := false
		for _, k := range templateFields {
			known = known || k == f
		}
		if !known {
			return nil, fmt.Errorf("key template %q: unknown field {%s} (want %s)", s, f, strings.Join(templateFields, ", "))
		}
		t.parts = append(t.parts, tmplPart{field: f})
		rest = rest[i+j+1:]
	}
	if !t.Has("file") && !t.Has("name") {
		return nil, fmt.Errorf("key template %q: needs {file} or {name}, so that every dump has its own key", s)
	}
	return t, nil
}

// Has reports whether the template uses {field}.
func (t *Template) Has(field string) bool {
	for _, p := range t.parts {
		if p.field == field {
			return true
		}
	}
	return false
}

// KeyFields are the values of one key.
type KeyFields struct {
	Prefix, Vehicle string
	Time            time.Time // the dump's time (its trigger's)
	File            string    // base name
	Table           string
}

// Expand returns the key: the template with its fields filled in, repeated
// and leading slashes removed (an empty prefix leaves no empty segment).
func (t *Template) Expand(f KeyFields) string {
	var b strings.Builder
	u := f.Time.UTC()
	for _, p := range t.parts {
		switch p.field {
		case "":
			b.WriteString(p.lit)
		case "prefix":
			b.WriteString(f.Prefix)
		case "vehicle":
			b.WriteString(f.Vehicle)
		case "date":
			b.WriteString(u.Format("2006-01-02"))
		case "year":
			b.WriteString(u.Format("2006"))
		case "month":
			b.WriteString(u.Format("01"))
		case "day":
			b.WriteString(u.Format("02"))
		case "hour":
			b.WriteString(u.Format("15"))
		case "file":
			b.WriteString(f.File)
		case "name":
			b.WriteString(strings.TrimSuffix(f.File, path.Ext(f.File)))
		case "table":
			b.WriteString(f.Table)
		}
	}
	segs := strings.Split(b.String(), "/")
	out := segs[:0]
	for _, s := range segs {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "/")
}

// String returns the template's source.
func (t *Template) String() string { return t.src }
