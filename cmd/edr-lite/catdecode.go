package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/schema"
)

// maxDecodeWarnings is how many undecodable messages of one topic cat
// names on standard error before it only counts them.
const maxDecodeWarnings = 5

// catDecoder turns messages into their decoded JSON (cat --decode,
// --format csv) through dumpfile.Decoder (one decoder per distinct type,
// built on its first message); messages that do not decode are shown raw,
// with a warning.
type catDecoder struct {
	e       *env
	out     *bufio.Writer
	file    string
	fields  []schema.Path
	payload string // base64, hex or none: how raw messages are shown
	csv     *csv.Writer

	dec    *dumpfile.Decoder
	warned map[string]int // undecodable messages by topic
	row    []string

	// What --fields found: each field in some decoded message, and the
	// top-level fields of each decoded type (its first message), for the
	// warning naming a field no message has.
	found   []bool
	decoded int
	types   map[string]bool
	keys    map[string]bool
}

func newCatDecoder(e *env, out *bufio.Writer, file string, fields []schema.Path, payload string, asCSV bool) *catDecoder {
	d := &catDecoder{e: e, out: out, file: file, fields: fields, payload: payload,
		dec: dumpfile.NewDecoder(), warned: map[string]int{}, found: make([]bool, len(fields)), types: map[string]bool{}, keys: map[string]bool{}}
	if asCSV {
		d.csv = csv.NewWriter(out)
		d.row = append(d.row, "time", "ts", "topic")
		for _, f := range fields {
			d.row = append(d.row, f.String())
		}
		d.csv.Write(d.row)
	}
	return d
}

// warn prints one line about a message shown raw, up to
// maxDecodeWarnings per topic.
func (d *catDecoder) warn(m *dumpfile.Msg, why string) {
	n := d.warned[m.Topic]
	d.warned[m.Topic] = n + 1
	if n < maxDecodeWarnings {
		fmt.Fprintf(d.e.stderr, "edr-lite cat: %s: %s at %s: shown raw: %s\n", d.file, m.Topic, rfc3339(m.TimeNs), why)
	}
}

// finish reports the warnings left out and flushes the CSV output. A
// field of --fields that no decoded message has is named in a warning (a
// typo gave an empty column); none of them found at all is an error, the
// output holding nothing asked for, unless --limit cut the output short
// (cut: a later message may have them).
func (d *catDecoder) finish(cut bool) error {
	for topic, n := range d.warned {
		if n > maxDecodeWarnings {
			fmt.Fprintf(d.e.stderr, "edr-lite cat: %s: %s: %d messages shown raw in all\n", d.file, topic, n)
		}
	}
	var err error
	if d.csv != nil {
		d.csv.Flush()
		err = d.csv.Error()
	}
	var missing []string
	for i, f := range d.fields {
		if !d.found[i] {
			missing = append(missing, f.String())
		}
	}
	if d.decoded == 0 || len(missing) == 0 || err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(d.keys))
	have := "the decoded messages' fields: " + strings.Join(keys, ", ")
	if len(missing) == len(d.fields) && !cut {
		return fmt.Errorf("--fields %s: no decoded message has any of them (%s)", strings.Join(missing, ","), have)
	}
	which := "no decoded message"
	if cut {
		which = "no message printed (--limit)"
	}
	for _, m := range missing {
		fmt.Fprintf(d.e.stderr, "edr-lite cat: warning: --fields %s: %s has it (%s)\n", m, which, have)
	}
	return nil
}

// saw records what a decoded message of m's type holds: its top-level
// fields, from the first message of each type.
func (d *catDecoder) saw(m *dumpfile.Msg, js []byte) {
	d.decoded++
	if name := m.Type.Schema.Name; !d.types[name] && len(d.keys) < 64 {
		d.types[name] = true
		var obj map[string]json.RawMessage
		if json.Unmarshal(js, &obj) == nil {
			for k := range obj {
				d.keys[k] = true
			}
		}
	}
}

// decode is the message as JSON, or nil when it is shown raw (with a
// warning, unless the topic has no schema: raw is what it is).
func (d *catDecoder) decode(m *dumpfile.Msg) []byte {
	js, err := d.dec.JSON(m.Type, m.Data)
	if err != nil {
		if !errors.Is(err, dumpfile.ErrRaw) {
			d.warn(m, err.Error())
		}
		return nil
	}
	return js
}

// writeJSONHead opens the JSON line of m in cat --jsonl and --decode:
// topic, ts and time, then gen_ts and gen_time only when the producer time
// is known (not 0: a UDP topic has none).
func writeJSONHead(out *bufio.Writer, m *dumpfile.Msg) {
	topic, _ := json.Marshal(m.Topic)
	fmt.Fprintf(out, `{"topic":%s,"ts":%d,"time":"%s"`, topic, m.TimeNs, rfc3339(m.TimeNs))
	if m.GenNs != 0 {
		fmt.Fprintf(out, `,"gen_ts":%d,"gen_time":"%s"`, m.GenNs, rfc3339(m.GenNs))
	}
}

// write prints m decoded: a JSON line
//
//	{"topic","ts","time","gen_ts","gen_time","type","data"}
//
// ("raw" in base64, or "raw_hex", instead of "data" for a message shown
// raw, its payload encoded straight into the output), or a CSV row when
// it has at least one of the fields; it reports whether it printed one.
func (d *catDecoder) write(m *dumpfile.Msg) bool {
	js := d.decode(m)
	if js != nil {
		d.saw(m, js)
	}
	if d.csv != nil {
		return d.writeCSV(m, js)
	}
	out := d.out
	writeJSONHead(out, m)
	if name := m.Type.Schema.Name; name != "" {
		typ, _ := json.Marshal(name)
		fmt.Fprintf(out, `,"type":%s`, typ)
	}
	switch {
	case js != nil:
		if len(d.fields) > 0 {
			js = d.pick(js)
		}
		out.WriteString(`,"data":`)
		out.Write(js)
	case d.payload == "base64" && len(m.Data) > 0:
		out.WriteString(`,"raw":"`)
		writeBase64(out, m.Data)
		out.WriteByte('"')
	case d.payload == "hex" && len(m.Data) > 0:
		fmt.Fprintf(out, `,"raw_hex":"%s"`, hexPreview(m.Data))
	}
	out.WriteString("}\n")
	return true
}

// pick is the object of the fields' values in js, by path, null where a
// field is absent.
func (d *catDecoder) pick(js []byte) []byte {
	out := []byte{'{'}
	for i, f := range d.fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, f.String())
		out = append(out, ':')
		if v, ok := f.LookupJSON(js); ok {
			d.found[i] = true
			out = append(out, v...)
		} else {
			out = append(out, "null"...)
		}
	}
	return append(out, '}')
}

// writeCSV writes m's row: its time, topic and each field's value (a
// string unquoted, an object or array as JSON, empty when absent). A
// message with none of the fields gets no row (false).
func (d *catDecoder) writeCSV(m *dumpfile.Msg, js []byte) bool {
	if js == nil {
		return false
	}
	d.row = append(d.row[:0], rfc3339(m.TimeNs), strconv.FormatInt(m.TimeNs, 10), m.Topic)
	found := false
	for i, f := range d.fields {
		v, ok := f.LookupJSON(js)
		cell := ""
		if ok {
			found, d.found[i] = true, true
			cell = csvCell(v)
		}
		d.row = append(d.row, cell)
	}
	if found {
		d.csv.Write(d.row)
	}
	return found
}

// csvCell is a JSON value as a spreadsheet reads it.
func csvCell(v []byte) string {
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case 'n':
		return ""
	}
	return string(v)
}
