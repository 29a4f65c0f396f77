package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

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
}

func newCatDecoder(e *env, out *bufio.Writer, file string, fields []schema.Path, payload string, asCSV bool) *catDecoder {
	d := &catDecoder{e: e, out: out, file: file, fields: fields, payload: payload,
		dec: dumpfile.NewDecoder(), warned: map[string]int{}}
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
// it has at least one of the fields.
func (d *catDecoder) write(m *dumpfile.Msg) {
	js := d.decode(m)
	if d.csv != nil {
		d.writeCSV(m, js)
		return
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
