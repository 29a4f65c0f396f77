package table

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/schema"
)

func codecOf(name string) (compress.Codec, error) {
	switch name {
	case "", "zstd":
		return &zstd.Codec{Level: zstd.SpeedFastest}, nil
	case "snappy":
		return &snappy.Codec{}, nil
	case "none":
		return &uncompressed.Codec{}, nil
	}
	return nil, fmt.Errorf("%w: compression %q: want zstd, snappy or none", ErrOptions, name)
}

// The columns every message table starts with, in this order.
const (
	colDump = iota
	colTopic
	colChannel
	colType
	colCaptureNs
	colCaptureTime
	colProducerNs
	colSize
	colTriggerReason
	colTriggerNs
	nFixed
)

// column is one column of a message table.
type column struct {
	name string
	typ  reflect.Type // of the struct field SchemaOf reads: string, int64, *int64, *float64, ...
	tag  string       // parquet tag options after the name
	kind schema.Kind  // decoded fields: what Numeric values become
	f32  bool         // decoded float stored as FLOAT
}

func fixedColumns() []column {
	i64, s := reflect.TypeFor[int64](), reflect.TypeFor[string]()
	return []column{
		{name: "dump", typ: s, tag: "dict"},
		{name: "topic", typ: s, tag: "dict"},
		{name: "channel", typ: s, tag: "dict"},
		{name: "type", typ: s, tag: "dict"},
		{name: "capture_ns", typ: i64},
		{name: "capture_time", typ: i64, tag: "timestamp(microsecond:utc)"},
		{name: "producer_ns", typ: reflect.TypeFor[*int64](), tag: "optional"},
		{name: "size", typ: i64},
		{name: "trigger_reason", typ: reflect.TypeFor[*string](), tag: "optional,dict"},
		{name: "trigger_ns", typ: reflect.TypeFor[*int64](), tag: "optional"},
	}
}

// tableWriter writes one table's file.
type tableWriter struct {
	name  string
	path  string
	f     *os.File
	bw    *bufio.Writer
	w     *parquet.GenericWriter[any]
	cols  []column
	rows  []parquet.Row
	sync  bool // fsync at close
	n     int  // rows buffered
	total int64
}

const batchRows = 1024

// RowGroupRows bounds the rows of one row group: parquet-go holds a row
// group in memory until it is written, so this bounds the writer's memory
// whatever the dump's size (about 100 bytes a row before compression), and
// engines get row groups to skip by their statistics.
const RowGroupRows = 1 << 17

func newTableWriter(name, path string, cols []column, codec compress.Codec, sync bool, mode os.FileMode) (*tableWriter, error) {
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		tag := c.name
		if c.tag != "" {
			tag += "," + c.tag
		}
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: c.typ, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	model := reflect.New(reflect.StructOf(fields)).Elem().Interface()
	sch := parquet.SchemaOf(model)
	f, err := createFile(path, mode)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := &tableWriter{name: name, path: path, f: f, bw: bw, cols: cols, sync: sync,
		w: parquet.NewGenericWriter[any](bw, sch, parquet.Compression(codec), parquet.CreatedBy("edr-lite", "", ""),
			parquet.MaxRowsPerRowGroup(RowGroupRows)),
		rows: make([]parquet.Row, batchRows)}
	for i := range tw.rows {
		tw.rows[i] = make(parquet.Row, len(cols))
	}
	return tw, nil
}

// row returns the next row to fill (every value must be set).
func (t *tableWriter) row() (parquet.Row, error) {
	if t.n == len(t.rows) {
		if err := t.flush(); err != nil {
			return nil, err
		}
	}
	t.n++
	return t.rows[t.n-1], nil
}

func (t *tableWriter) flush() error {
	if t.n == 0 {
		return nil
	}
	_, err := t.w.WriteRows(t.rows[:t.n])
	t.total += int64(t.n)
	t.n = 0
	return err
}

func (t *tableWriter) close() (File, error) {
	err := t.flush()
	if cerr := t.w.Close(); err == nil {
		err = cerr
	}
	if ferr := t.bw.Flush(); err == nil {
		err = ferr
	}
	if t.sync {
		if serr := t.f.Sync(); err == nil {
			err = serr
		}
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	out := File{Table: t.name, Path: t.path, Rows: t.total}
	if st, serr := os.Stat(t.path); serr == nil {
		out.Size = st.Size()
	}
	return out, err
}

// topicState is what the writers keep per topic: its strings as bytes
// (set once), its typed table and the column of each decoded path.
type topicState struct {
	topic, channel, typ []byte
	typed               *tableWriter
	dec                 schema.Decoder
	layout              *schema.Layout // dec, when a packed layout: called directly, nothing allocated
	paths               map[string]int // concrete path -> column
}

type messageWriters struct {
	d        *Dump
	dump     []byte
	all      *tableWriter
	tables   map[string]*tableWriter // typed tables by name
	order    []*tableWriter
	topics   map[string]*topicState // by name#channel
	triggers []dumpinfo.Trigger
	reasons  [][]byte
	rep      *Report
	cur      parquet.Row // the typed row being filled by a Numeric callback
	curTopic *topicState
}

func topicKey(name, channel string) string {
	if channel == "" {
		return name
	}
	return name + "#" + channel
}

func newMessageWriters(d *Dump, o *Options, codec compress.Codec, pathOf func(string) (string, error), rep *Report) (*messageWriters, error) {
	w := &messageWriters{d: d, dump: []byte(d.ID), tables: map[string]*tableWriter{}, topics: map[string]*topicState{},
		triggers: d.Info.Triggers, rep: rep}
	for _, t := range w.triggers {
		w.reasons = append(w.reasons, []byte(t.Reason))
	}
	p, err := pathOf(Messages)
	if err != nil {
		return nil, err
	}
	if w.all, err = newTableWriter(Messages, p, fixedColumns(), codec, !o.NoSync, o.FileMode); err != nil {
		return nil, err
	}
	w.order = append(w.order, w.all)
	// typed topics: their schema, its table, its columns
	tableIDs := map[string]string{} // table name -> schema ID, to tell schemas of the same name apart
	for _, t := range d.Topics {
		ts := &topicState{topic: []byte(t.Name), channel: []byte(t.Channel), typ: []byte(t.Type)}
		w.topics[topicKey(t.Name, t.Channel)] = ts
		typ, ok := o.Schemas[topicKey(t.Name, t.Channel)]
		if !ok {
			typ, ok = o.Schemas[t.Name]
		}
		if !ok && o.Types != nil {
			typ, ok = o.Types.TopicType(t.Name, t.Channel)
		}
		if !ok {
			continue
		}
		dec, err := schema.NewDecoder(typ)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: no typed table: %v", topicKey(t.Name, t.Channel), err))
			continue
		}
		if len(ts.typ) == 0 {
			ts.typ = []byte(typ.Schema.Name)
		}
		cols, paths, skipped, renamed := decodedColumns(dec.Fields())
		for _, s := range skipped {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %s", topicKey(t.Name, t.Channel), s))
		}
		for _, s := range renamed {
			rep.Renamed = append(rep.Renamed, fmt.Sprintf("%s: field %s", topicKey(t.Name, t.Channel), s))
		}
		name := TableName(typ.Schema.Name)
		tid := typ.ID()
		id := hex.EncodeToString(tid[:4])
		if prev, seen := tableIDs[name]; seen && prev != id {
			name += "_" + id // the same name, another schema: a table of its own
		}
		tableIDs[name] = id
		tw := w.tables[name]
		if tw == nil {
			p, err := pathOf(name)
			if err != nil {
				return w, w.abort(err)
			}
			if tw, err = newTableWriter(name, p, append(fixedColumns(), cols...), codec, !o.NoSync, o.FileMode); err != nil {
				return w, w.abort(err)
			}
			w.tables[name] = tw
			w.order = append(w.order, tw)
		}
		ts.typed, ts.dec, ts.paths = tw, dec, paths
		ts.layout, _ = dec.(*schema.Layout)
	}
	return w, nil
}

// abort closes and removes the files opened so far.
func (w *messageWriters) abort(err error) error {
	for _, t := range w.order {
		t.close()
		os.Remove(t.path)
	}
	w.order = nil
	return err
}

// decodedColumns returns a column per numeric leaf of a schema, arrays of
// known length expanded (wheel[4]: wheel_0 .. wheel_3), and the concrete
// path (as Numeric reports it) of each. Strings, bytes, sub-messages that
// are not expanded, arrays of varying length and maps have no column.
func decodedColumns(fields []schema.Field) (cols []column, paths map[string]int, skipped, renamed []string) {
	paths = map[string]int{}
	// names taken, compared as engines compare them (DuckDB, Spark and
	// Trino ignore case): the fixed columns and the partitions, which
	// hive partitioning would put in the place of a column of their name
	used := map[string]bool{}
	for _, c := range fixedColumns() {
		used[strings.ToLower(c.name)] = true
	}
	for _, p := range Partitions {
		used[p] = true
	}
	for _, f := range fields {
		if !f.Kind.Numeric() {
			continue
		}
		if strings.Contains(f.Path, ".*") {
			skipped = append(skipped, f.Path+": a map, no column")
			continue
		}
		varying := false
		for _, d := range f.Dims {
			varying = varying || d < 0
		}
		if varying {
			skipped = append(skipped, f.Path+": an array of varying length, no column")
			continue
		}
		for _, concrete := range expandPath(f.Path, f.Dims) {
			name := ColumnName(concrete)
			first := name
			for used[strings.ToLower(name)] {
				name += "_"
			}
			used[strings.ToLower(name)] = true
			if name != first {
				renamed = append(renamed, fmt.Sprintf("%s: column %s (%s is taken: a fixed column, a partition or another field)", concrete, name, first))
			}
			c := column{name: name, kind: f.Kind, tag: "optional"}
			switch f.Kind {
			case schema.KindFloat:
				c.f32 = f.Type == "f32le" || f.Type == "f32be" || f.Type == "float"
				c.typ = reflect.TypeFor[*float64]()
				if c.f32 {
					c.typ = reflect.TypeFor[*float32]()
				}
			case schema.KindBool:
				c.typ = reflect.TypeFor[*bool]()
			default:
				c.typ = reflect.TypeFor[*int64]()
			}
			paths[concrete] = nFixed + len(cols)
			cols = append(cols, c)
		}
	}
	return cols, paths, skipped, renamed
}

// expandPath turns "wheel[]" with dims [4] into wheel[0] .. wheel[3]; at
// most 4096 columns per field.
func expandPath(p string, dims []int) []string {
	out := []string{p}
	for _, d := range dims {
		var next []string
		for _, q := range out {
			i := strings.Index(q, "[]")
			if i < 0 {
				return []string{p}
			}
			for k := 0; k < d && len(next) < 4096; k++ {
				next = append(next, q[:i]+"["+strconv.Itoa(k)+"]"+q[i+2:])
			}
		}
		out = next
	}
	return out
}

// ColumnName is the column of a decoded field path: "." and "[i]" become
// "_" and "_i", any byte but [A-Za-z0-9_] becomes "_" ("p.x" -> "p_x",
// "wheel[2]" -> "wheel_2", `temps["rear-left"]` -> "temps_rear_left").
func ColumnName(path string) string {
	var b strings.Builder
	last := byte('_')
	for i := 0; i < len(path); i++ {
		c := path[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			c = '_'
		}
		if c == '_' && last == '_' && b.Len() > 0 {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	return strings.TrimRight(b.String(), "_")
}

// TableName is the table of a schema name: [A-Za-z0-9._-] kept, anything
// else "_"; "messages" and "dumps" get a "t_" in front; an empty name is
// "untitled".
func TableName(schemaName string) string {
	var b strings.Builder
	for i := 0; i < len(schemaName) && i < 128; i++ {
		c := schemaName[i]
		if c == '_' || c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	switch n {
	case "":
		return "untitled"
	case Messages, Dumps:
		return "t_" + n
	}
	if n[0] == '.' {
		n = "_" + n[1:]
	}
	return n
}

// triggerOf returns the trigger whose effective window
// (dumpinfo.Trigger.Window) holds t, the nearest when several do, -1 when
// none does.
func (w *messageWriters) triggerOf(t int64) int {
	best, bestD := -1, int64(0)
	for i := range w.triggers {
		tr := &w.triggers[i]
		from, to, _, _, ok := tr.Window()
		if !ok || t < from || t > to {
			continue
		}
		d := t - tr.TimeNs
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

func (w *messageWriters) fill(row parquet.Row, ts *topicState, m *Message, trig int) {
	row[colDump] = parquet.ByteArrayValue(w.dump).Level(0, 0, colDump)
	row[colTopic] = parquet.ByteArrayValue(ts.topic).Level(0, 0, colTopic)
	row[colChannel] = parquet.ByteArrayValue(ts.channel).Level(0, 0, colChannel)
	row[colType] = parquet.ByteArrayValue(ts.typ).Level(0, 0, colType)
	row[colCaptureNs] = parquet.Int64Value(m.CaptureNs).Level(0, 0, colCaptureNs)
	row[colCaptureTime] = parquet.Int64Value(floorDiv(m.CaptureNs, 1000)).Level(0, 0, colCaptureTime)
	if m.ProducerNs != 0 {
		row[colProducerNs] = parquet.Int64Value(m.ProducerNs).Level(0, 1, colProducerNs)
	} else {
		row[colProducerNs] = parquet.NullValue().Level(0, 0, colProducerNs)
	}
	row[colSize] = parquet.Int64Value(int64(len(m.Data))).Level(0, 0, colSize)
	if trig >= 0 {
		row[colTriggerReason] = parquet.ByteArrayValue(w.reasons[trig]).Level(0, 1, colTriggerReason)
		row[colTriggerNs] = parquet.Int64Value(w.triggers[trig].TimeNs).Level(0, 1, colTriggerNs)
	} else {
		row[colTriggerReason] = parquet.NullValue().Level(0, 0, colTriggerReason)
		row[colTriggerNs] = parquet.NullValue().Level(0, 0, colTriggerNs)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (w *messageWriters) add(m *Message) error {
	ts := w.topics[topicKey(m.Name, m.Channel)]
	if ts == nil { // a topic the dump's list does not name
		ts = &topicState{topic: []byte(m.Name), channel: []byte(m.Channel)}
		w.topics[topicKey(m.Name, m.Channel)] = ts
	}
	trig := w.triggerOf(m.CaptureNs)
	row, err := w.all.row()
	if err != nil {
		return err
	}
	w.fill(row, ts, m, trig)
	if ts.typed == nil {
		return nil
	}
	row, err = ts.typed.row()
	if err != nil {
		return err
	}
	w.fill(row, ts, m, trig)
	for i := nFixed; i < len(row); i++ {
		row[i] = parquet.NullValue().Level(0, 0, i)
	}
	w.cur, w.curTopic = row, ts
	if ts.layout != nil {
		err = ts.layout.Numeric(m.Data, w.setField)
	} else {
		err = ts.dec.Numeric(m.Data, w.setField)
	}
	_ = err // a message the schema does not decode (too short): its fields stay null
	return nil
}

// setField is the Numeric callback: the value of one decoded path.
func (w *messageWriters) setField(path []byte, v float64) {
	i, ok := w.curTopic.paths[string(path)]
	if !ok {
		return
	}
	c := &w.curTopic.typed.cols[i]
	switch {
	case c.kind == schema.KindFloat && c.f32:
		w.cur[i] = parquet.FloatValue(float32(v)).Level(0, 1, i)
	case c.kind == schema.KindFloat:
		w.cur[i] = parquet.DoubleValue(v).Level(0, 1, i)
	case c.kind == schema.KindBool:
		w.cur[i] = parquet.BooleanValue(v != 0).Level(0, 1, i)
	default:
		w.cur[i] = parquet.Int64Value(int64(v)).Level(0, 1, i)
	}
}

func (w *messageWriters) close() error {
	var first error
	for _, t := range w.order {
		f, err := t.close()
		if err == nil || first == nil {
			w.rep.Files = append(w.rep.Files, f)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("table %s: %w", t.name, err)
		}
	}
	sort.SliceStable(w.rep.Files, func(i, j int) bool { return w.rep.Files[i].Table < w.rep.Files[j].Table })
	return first
}
