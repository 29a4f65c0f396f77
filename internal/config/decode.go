package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/edr-lite/edr-lite/internal/suggest"
)

// The configuration is decoded in two steps, so that one run reports every
// problem of a file: the TOML parser builds the document's tree (a syntax
// error on a "key = value" line is reported and that line left out, then
// the parse goes on), and decoder fills the File from the tree key by key,
// a problem per key it cannot take (an unknown key, a value of the wrong
// type, a size or duration that does not parse), keeping the default of
// that key.

// maxSyntaxErrors bounds the syntax errors one parse reports (each one
// costs a parse of the file).
const maxSyntaxErrors = 20

// parseTree parses data into the document's tree. A syntax error on a line
// that holds a whole "key = value" is a problem and the line is left out;
// the parse then goes on, up to maxSyntaxErrors. A nil tree means a syntax
// error that cannot be stepped over (a table header, a value over several
// lines): ps then says where.
func parseTree(name string, data []byte, ix lineIndex) (map[string]any, Errors) {
	lines := bytes.Split(data, []byte("\n"))
	var ps Errors
	for {
		var tree map[string]any
		_, err := toml.NewDecoder(bytes.NewReader(bytes.Join(lines, []byte("\n")))).Decode(&tree)
		if err == nil {
			return tree, ps
		}
		var pe toml.ParseError
		if !errors.As(err, &pe) {
			return nil, append(ps, &Problem{File: name, Msg: err.Error()})
		}
		n := pe.Position.Line
		if n >= 2 && n-1 <= len(lines) && brokenHeader(string(lines[n-2])) {
			n-- // the parser stands on the next line when it sees the header does not close
		}
		key := ix.keyAt(n)
		if key == "" {
			key = pe.LastKey
		}
		p := &Problem{File: name, Line: n, Key: key, Msg: pe.Message}
		var text string
		if n >= 1 && n <= len(lines) {
			text = string(lines[n-1])
		}
		p.Msg += quoteHint(text)
		if len(ps) > 0 && ps[len(ps)-1].Line == p.Line && ps[len(ps)-1].Msg == p.Msg {
			return nil, ps // leaving the line out did not help
		}
		ps = append(ps, p)
		if n < 1 || n > len(lines) || !wholeKeyLine(text) || len(ps) >= maxSyntaxErrors {
			return nil, ps
		}
		lines[n-1] = nil // left out; the line numbers of the rest stay
	}
}

// brokenHeader reports whether line opens a table header it does not
// close ("[recorder").
func brokenHeader(line string) bool {
	return reBrokenHeader.MatchString(line) && !reTableHeader.MatchString(line) && !reArrayHeader.MatchString(line)
}

// reBareValue is "key = word" where word is neither a number, a boolean
// nor the start of a string, array or table: a string without its quotes.
var reBareValue = regexp.MustCompile(`^\s*("[^"]*"|[A-Za-z0-9_.-]+)\s*=\s*([A-Za-z0-9_.:/+-]*[A-Za-z_:/][A-Za-z0-9_.:/+-]*)\s*(#.*)?$`)

// quoteHint is the fix of a syntax error on a line whose value is a bare
// word (post = 2seconds): write it in quotes.
func quoteHint(line string) string {
	m := reBareValue.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	switch m[2] {
	case "true", "false", "inf", "nan", "+inf", "-inf", "+nan", "-nan":
		return ""
	}
	return fmt.Sprintf(" (write strings in quotes: %s = %q)", unquote(m[1]), m[2])
}

// wholeKeyLine reports whether line is a "key = value" whose value ends
// on the line (no multi-line string, array or table opened), so that
// leaving it out leaves the rest of the file as it was.
func wholeKeyLine(line string) bool {
	if !reKey.MatchString(line) || strings.Contains(line, `"""`) || strings.Contains(line, "'''") {
		return false
	}
	open := 0
	inStr := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inStr != 0:
			if c == '\\' && inStr == '"' {
				i++
			} else if c == inStr {
				inStr = 0
			}
		case c == '"' || c == '\'':
			inStr = c
		case c == '#':
			return open == 0
		case c == '[' || c == '{':
			open++
		case c == ']' || c == '}':
			open--
		}
	}
	return open == 0
}

// decoder fills a File from the document's tree; every key it cannot take
// is a problem at that key, whose default stays.
type decoder struct {
	f   *File
	ps  Errors
	bad map[string]bool // keys with a problem
}

func (d *decoder) add(key, format string, args ...any) {
	d.ps = append(d.ps, d.f.Problem(key, format, args...))
	d.bad[key] = true
}

var (
	unmarshalerType = reflect.TypeFor[toml.Unmarshaler]()
	paramsType      = reflect.TypeFor[Params]()
)

// tableKeys lists the TOML keys of a struct type: its tagged fields, those
// of embedded structs without a tag (TypeKeys) flattened in, "-" left out.
func tableKeys(t reflect.Type) (names []string, index map[string][]int) {
	index = map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			idx := append(append([]int(nil), prefix...), i)
			tag, ok := sf.Tag.Lookup("toml")
			switch {
			case tag == "-" || !sf.IsExported() && !sf.Anonymous:
			case !ok && sf.Anonymous && sf.Type.Kind() == reflect.Struct:
				walk(sf.Type, idx)
			case ok:
				n, _, _ := strings.Cut(tag, ",")
				names = append(names, n)
				index[n] = idx
			}
		}
	}
	walk(t, nil)
	sort.Strings(names)
	return names, index
}

// table decodes the table m at key (the File itself when "") into the
// struct rv.
func (d *decoder) table(key string, m map[string]any, rv reflect.Value) {
	names, index := tableKeys(rv.Type())
	for _, k := range sortedKeys(m) {
		child := k
		if key != "" {
			child = key + "." + k
		}
		idx, ok := index[k]
		if !ok {
			d.add(child, "unknown key%s", unknownHint(k, key, names))
			continue
		}
		d.value(child, m[k], rv.FieldByIndex(idx))
	}
}

// unknownHint is what an unknown key in table (indexed: "rule[2]") is
// probably meant to be, or the keys the table takes.
func unknownHint(k, table string, names []string) string {
	if h := suggest.DidYouMean(k, names); h != "" {
		return h
	}
	if ts := keyTables()[k]; len(ts) > 0 {
		return fmt.Sprintf(" (%s is a key of %s)", k, strings.Join(ts, " and "))
	}
	where := "the file's top level"
	switch {
	case strings.HasSuffix(table, "]"):
		where = "[[" + reIndex.ReplaceAllString(table, "") + "]]"
	case table != "":
		where = "[" + reIndex.ReplaceAllString(table, "") + "]"
	}
	return fmt.Sprintf(" (%s takes: %s)", where, strings.Join(names, ", "))
}

var reIndex = regexp.MustCompile(`\[\d+\]`)

// keyTables maps each key of the configuration to the tables that take it
// ("max_files" -> "[rotation]"), for an unknown key put in the wrong one.
var keyTables = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type, path string, array bool)
	walk = func(t reflect.Type, path string, array bool) {
		names, index := tableKeys(t)
		for _, n := range names {
			ft := t.FieldByIndex(index[n]).Type
			child := n
			if path != "" {
				child = path + "." + n
			}
			switch {
			case ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshalerType):
				walk(ft, child, false)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), child, true)
			case path != "":
				name := "[" + path + "]"
				if array {
					name = "[" + name + "]"
				}
				out[n] = append(out[n], name)
			}
		}
	}
	walk(reflect.TypeFor[File](), "", false)
	return out
})

// value decodes v, the value at key, into rv.
func (d *decoder) value(key string, v any, rv reflect.Value) {
	if rv.Kind() == reflect.Pointer {
		n := reflect.New(rv.Type().Elem())
		before := len(d.ps)
		d.value(key, v, n.Elem())
		if len(d.ps) == before {
			rv.Set(n)
		}
		return
	}
	if rv.Type() == paramsType {
		d.params(key, v, rv)
		return
	}
	if rv.Addr().Type().Implements(unmarshalerType) {
		if err := rv.Addr().Interface().(toml.Unmarshaler).UnmarshalTOML(v); err != nil {
			d.add(key, "%v", err)
		}
		return
	}
	switch rv.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.add(key, "want a table, got %s", describe(v))
			return
		}
		d.table(key, m, rv)
	case reflect.Slice:
		var elems []any
		switch a := v.(type) {
		case []any:
			elems = a
		case []map[string]any:
			elems = make([]any, len(a))
			for i := range a {
				elems[i] = a[i]
			}
		default:
			d.add(key, "want an array, got %s%s", describe(v), arrayHint(key, v, rv.Type().Elem()))
			return
		}
		// set even with a bad element, so that the checks that follow
		// see every [[table]] (the file is refused anyway)
		out := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
		for i, e := range elems {
			d.value(key+"["+strconv.Itoa(i)+"]", e, out.Index(i))
		}
		rv.Set(out)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			d.add(key, "want a table, got %s", describe(v))
			return
		}
		out := reflect.MakeMapWithSize(rv.Type(), len(m))
		for _, k := range sortedKeys(m) {
			e := m[k]
			s, ok := e.(string)
			if !ok {
				d.add(key+"."+k, "want a string, got %s", describe(e))
				continue
			}
			out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(s))
		}
		rv.Set(out)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.add(key, "want a string, got %s%s", describe(v), quoteFix(key, v))
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.add(key, "want true or false, got %s%s", describe(v), unquoteFix(key, v, func(s string) bool { return s == "true" || s == "false" }))
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			d.add(key, "want an integer, got %s%s", describe(v), unquoteFix(key, v, func(s string) bool {
				_, err := strconv.ParseInt(s, 0, 64)
				return err == nil
			}))
			return
		}
		if rv.OverflowInt(n) {
			d.add(key, "%d: more than this setting holds (at most %d)", n, int64(1)<<(rv.Type().Bits()-1)-1)
			return
		}
		rv.SetInt(n)
	case reflect.Float32, reflect.Float64:
		switch x := v.(type) {
		case int64:
			rv.SetFloat(float64(x))
		case float64:
			rv.SetFloat(x)
		default:
			d.add(key, "want a number, got %s", describe(v))
		}
	default:
		panic(fmt.Sprintf("BUG: config: no decoding for %s (%s)", rv.Type(), key))
	}
}

// Params are a rule's params: the rule reads each one as a string, a
// number or a boolean (param(name, default) converts it to the default's
// type). TOML numbers and booleans are taken as written (offset = 0,
// high = 300.0, enabled = true), as are strings.
type Params map[string]string

// params decodes a rule's params table: strings, and numbers and booleans
// in their plain text.
func (d *decoder) params(key string, v any, rv reflect.Value) {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(key, "want a table (params = { name = value, ... }), got %s", describe(v))
		return
	}
	out := make(Params, len(m))
	for _, k := range sortedKeys(m) { // problems in the same order every run
		e := m[k]
		switch x := e.(type) {
		case string:
			out[k] = x
		case int64:
			out[k] = strconv.FormatInt(x, 10)
		case float64:
			out[k] = strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			d.add(key+"."+k, "want a string, a number or a boolean, got %s", describe(e))
		}
	}
	rv.Set(reflect.ValueOf(out))
}

// describe names a TOML value for a message: its type and, for a scalar,
// its value.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("the string %q", x)
	case int64:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprintf("the number %v", x)
		}
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case time.Time:
		return "a date-time"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// lastKey is the last part of an indexed key ("rule[1].time" -> "time").
func lastKey(key string) string {
	k := key[strings.LastIndex(key, ".")+1:]
	if i := strings.IndexByte(k, '['); i >= 0 {
		k = k[:i]
	}
	return k
}

// quoteFix is the fix of a number or boolean given for a string.
func quoteFix(key string, v any) string {
	switch x := v.(type) {
	case int64, bool:
		return fmt.Sprintf(" (write it in quotes: %s = \"%v\")", lastKey(key), x)
	case float64:
		return fmt.Sprintf(" (write it in quotes: %s = \"%s\")", lastKey(key), strconv.FormatFloat(x, 'g', -1, 64))
	}
	return ""
}

// unquoteFix is the fix of a number or boolean written in quotes.
func unquoteFix(key string, v any, ok func(string) bool) string {
	if s, isStr := v.(string); isStr && ok(strings.TrimSpace(s)) {
		return fmt.Sprintf(" (write it without quotes: %s = %s)", lastKey(key), strings.TrimSpace(s))
	}
	return ""
}

// arrayHint is the fix of a single value given for an array of them.
func arrayHint(key string, v any, elem reflect.Type) string {
	switch x := v.(type) {
	case string:
		if elem.Kind() == reflect.String {
			return fmt.Sprintf(" (write a list: %s = [%q])", lastKey(key), x)
		}
	case int64:
		if elem.Kind() == reflect.Int {
			return fmt.Sprintf(" (write a list: %s = [%d])", lastKey(key), x)
		}
	case map[string]any:
		if elem.Kind() == reflect.Struct {
			return fmt.Sprintf(" (each one is a [[%s]] table)", reIndex.ReplaceAllString(key, ""))
		}
	}
	return ""
}

// sortedKeys returns m's keys in order, so that problems come out the same
// every run.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
