package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/schema"
)

// maxDecodeWarnings is how many undecodable messages of one topic cat
// names on standard error before it only counts them.
const maxDecodeWarnings = 5

// catDecoder turns messages into their decoded JSON (cat --decode,
// --format csv): one decoder per distinct type, built on its first
// message; messages that do not decode are shown raw, with a warning.
type catDecoder struct {
	e       *env
	out     *bufio.Writer
	file    string
	fields  []schema.Path
	payload string // base64, hex or none: how raw messages are shown
	csv     *csv.Writer

	byPtr  map[*ingest.Type]*decodeEntry // the readers hand out one *Type per span or channel
	byID   map[ingest.ContentID]*decodeEntry
	warned map[string]int // undecodable messages by topic
	buf    []byte
	line   bytes.Buffer // buf compacted
	row    []string
}

type decodeEntry struct {
	dec schema.Decoder // nil: shown raw
	// why is the reason a typed topic is shown raw ("" for a topic
	// without a schema: raw is what it is).
	why string
}

func newCatDecoder(e *env, out *bufio.Writer, file string, fields []schema.Path, payload string, asCSV bool) *catDecoder {
	d := &catDecoder{e: e, out: out, file: file, fields: fields, payload: payload,
		byPtr: map[*ingest.Type]*decodeEntry{}, byID: map[ingest.ContentID]*decodeEntry{}, warned: map[string]int{}}
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

// maxTypePointers bounds byPtr, should a reader hand out a *Type per
// message: past it, types are found by content ID (a hash of the schema).
const maxTypePointers = 4096

// entry is the decoder of t, built once per distinct type.
func (d *catDecoder) entry(t *ingest.Type) *decodeEntry {
	if en, ok := d.byPtr[t]; ok {
		return en
	}
	id := t.ID()
	en, ok := d.byID[id]
	if !ok {
		en = &decodeEntry{}
		if t.MessageEncoding != ingest.EncodingRaw && !t.IsZero() {
			dec, err := schema.NewDecoder(*t)
			switch {
			case err == nil:
				en.dec = dec
			case errors.Is(err, schema.ErrNoDecoder):
				en.why = fmt.Sprintf("%s messages are not decoded", t.MessageEncoding)
			default:
				en.why = fmt.Sprintf("schema %q does not build: %v", t.Schema.Name, err)
			}
		}
		d.byID[id] = en
	}
	if len(d.byPtr) < maxTypePointers {
		d.byPtr[t] = en
	}
	return en
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

// finish reports the warnings left out and flushes the CSV output.
func (d *catDecoder) finish() error {
	for topic, n := range d.warned {
		if n > maxDecodeWarnings {
			fmt.Fprintf(d.e.stderr, "edr-lite cat: %s: %s: %d messages shown raw in all\n", d.file, topic, n)
		}
	}
	if d.csv != nil {
		d.csv.Flush()
		return d.csv.Error()
	}
	return nil
}

// decode is the message as JSON, or nil when it is shown raw.
func (d *catDecoder) decode(m *dumpfile.Msg) []byte {
	en := d.entry(m.Type)
	if en.dec == nil {
		if en.why != "" {
			d.warn(m, en.why)
		}
		return nil
	}
	out, err := en.dec.AppendJSON(d.buf[:0], m.Data)
	if err != nil {
		d.warn(m, err.Error())
		return nil
	}
	d.buf = out
	// one line, whatever whitespace the decoder wrote (protojson's varies)
	d.line.Reset()
	if err := json.Compact(&d.line, out); err != nil {
		d.warn(m, "decoded to invalid JSON: "+err.Error())
		return nil
	}
	return d.line.Bytes()
}

// write prints m decoded: a JSON line
//
//	{"topic","ts","time","gen_ts","gen_time","type","data"}
//
// ("raw" in base64, or "raw_hex", instead of "data" for a message shown
// raw, its payload encoded straight into the output), or a CSV row when
// it has at least one of the fields.
func (d *catDecoder) write(m *dumpfile.Msg) {
	js := d.decode(m)
	if d.csv != nil {
		d.writeCSV(m, js)
		return
	}
	out := d.out
	topic, _ := json.Marshal(m.Topic)
	fmt.Fprintf(out, `{"topic":%s,"ts":%d,"time":"%s","gen_ts":%d`, topic, m.TimeNs, rfc3339(m.TimeNs), m.GenNs)
	if m.GenNs != 0 {
		fmt.Fprintf(out, `,"gen_time":"%s"`, rfc3339(m.GenNs))
	}
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
			out = append(out, v...)
		} else {
			out = append(out, "null"...)
		}
	}
	return append(out, '}')
}

// writeCSV writes m's row: its time, topic and each field's value (a
// string unquoted, an object or array as JSON, empty when absent). A
// message with none of the fields gets no row.
func (d *catDecoder) writeCSV(m *dumpfile.Msg, js []byte) {
	if js == nil {
		return
	}
	d.row = append(d.row[:0], rfc3339(m.TimeNs), strconv.FormatInt(m.TimeNs, 10), m.Topic)
	found := false
	for _, f := range d.fields {
		v, ok := f.LookupJSON(js)
		cell := ""
		if ok {
			found = true
			cell = csvCell(v)
		}
		d.row = append(d.row, cell)
	}
	if found {
		d.csv.Write(d.row)
	}
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
