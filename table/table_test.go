package table

import (
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/schema"
)

const t0 = int64(1_764_670_000_000_000_000)

// testDump: a packed state topic (f32 speed, u8 gear, i16be wheel[2], a
// nested struct, a string) at 10 Hz, a raw topic, two triggers.
func testDump(n int) *Dump {
	d := &Dump{ID: "20251202T100640.000000000Z_hard-brake_1", File: "20251202T100640.000000000Z_hard-brake_1.pack", Format: "pack", Size: 1234,
		Info: dumpinfo.Info{Host: "car-9", StartNs: t0, EndNs: t0 + int64(n)*100e6,
			Triggers: []dumpinfo.Trigger{
				{ID: 1, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", TimeNs: t0 + 200e6, PreNs: 200e6, PostNs: 100e6},
				{ID: 2, Reason: "manual", Source: "command", TimeNs: t0 + 800e6, PreNs: 100e6, PostNs: 100e6}},
			Topics: []dumpinfo.TopicAccount{{Topic: "vehicle/state", Type: "vehicle.State", Messages: uint64(n), Bytes: 1, Overwritten: 2},
				{Topic: "camera", Messages: uint64(n), LostAtSource: 3}},
			Labels: map[string]string{"build": "42"}},
		Topics: []Topic{{Name: "vehicle/state", Type: "vehicle.State", Messages: uint64(n)}, {Name: "camera", Messages: uint64(n)}}}
	d.Walk = func(fn func(m *Message) error) error {
		for i := 0; i < n; i++ {
			ts := t0 + int64(i)*100e6
			b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(i)/4))
			b = append(b, byte(i%6))
			b = binary.BigEndian.AppendUint16(b, uint16(int16(-i)))
			b = binary.BigEndian.AppendUint16(b, uint16(i))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(i)*1.5))
			b = append(b, 2, 'h', 'i')
			if i == 3 {
				b = b[:3] // too short: its fields are null
			}
			if err := fn(&Message{Name: "vehicle/state", CaptureNs: ts, ProducerNs: ts - 5, Data: b}); err != nil {
				return err
			}
			if err := fn(&Message{Name: "camera", CaptureNs: ts + 1, Data: make([]byte, 1000+i)}); err != nil {
				return err
			}
		}
		return nil
	}
	return d
}

const stateLayout = "struct pos { f64le x (m) }\nf32le speed (m/s); u8 gear; i16be wheel[2] (rpm); pos p; str8 note\n"

// readRows reads a file back with parquet-go's reader: top-level leaf
// columns by name (nil for null), and for a nested column (a LIST) the
// values of its leaves, by dotted path.
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	cols := pf.Schema().Columns()
	var out []map[string]any
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 64)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				m := map[string]any{}
				for _, v := range row {
					p := cols[v.Column()]
					var x any
					switch v.Kind() {
					case parquet.Int64:
						x = v.Int64()
					case parquet.Int32:
						x = int64(v.Int32())
					case parquet.Float:
						x = v.Float()
					case parquet.Double:
						x = v.Double()
					case parquet.Boolean:
						x = v.Boolean()
					case parquet.ByteArray:
						x = string(v.ByteArray())
					}
					if v.IsNull() {
						x = nil
					}
					if len(p) == 1 {
						m[p[0]] = x
					} else if x != nil {
						k := strings.Join(p, ".")
						l, _ := m[k].([]any)
						m[k] = append(l, x)
					}
				}
				out = append(out, m)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

func TestWriteTables(t *testing.T) {
	dir := t.TempDir()
	typ := schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: "vehicle.State", Encoding: schema.SchemaLayout, Data: []byte(stateLayout)}}
	rep, err := Write(testDump(10), dir, Options{Vehicle: "car-9", Schemas: map[string]schema.Type{"vehicle/state": typ}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 20 || len(rep.Files) != 3 {
		t.Fatalf("report %+v", rep)
	}
	base := "vehicle=car-9/date=2025-12-02/20251202T100640.000000000Z_hard-brake_1.parquet"
	typed := readRows(t, filepath.Join(dir, "vehicle.State", base))
	if len(typed) != 10 {
		t.Fatalf("typed rows: %d", len(typed))
	}
	r := typed[2]
	want := map[string]any{"dump": "20251202T100640.000000000Z_hard-brake_1", "topic": "vehicle/state", "type": "vehicle.State",
		"capture_ns": t0 + 200e6, "producer_ns": t0 + 200e6 - 5, "size": int64(20), "trigger_reason": "hard-brake", "trigger_ns": t0 + 200e6,
		"speed": float32(0.5), "gear": int64(2), "wheel_0": int64(-2), "wheel_1": int64(2), "p_x": 3.0}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("row 2 %s = %#v, want %#v", k, r[k], v)
		}
	}
	if _, ok := r["note"]; ok {
		t.Error("a string field got a column")
	}
	if typed[3]["speed"] != nil || typed[3]["gear"] != nil {
		t.Errorf("a short message: %v, want null fields", typed[3])
	}
	if typed[5]["trigger_reason"] != nil || typed[8]["trigger_reason"] != "manual" {
		t.Errorf("trigger of rows 5 and 8: %v %v", typed[5]["trigger_reason"], typed[8]["trigger_reason"])
	}
	msgs := readRows(t, filepath.Join(dir, Messages, base))
	if len(msgs) != 20 || msgs[1]["topic"] != "camera" || msgs[1]["size"] != int64(1000) || msgs[1]["producer_ns"] != nil {
		t.Errorf("messages: %d rows, row 1 %v", len(msgs), msgs[1])
	}
	if _, ok := msgs[0]["speed"]; ok {
		t.Error("messages has decoded columns")
	}
	dumps := readRows(t, filepath.Join(dir, Dumps, base))
	if len(dumps) != 1 || dumps[0]["reasons"] != "hard-brake,manual" || dumps[0]["lost"] != int64(5) || dumps[0]["host"] != "car-9" {
		t.Fatalf("dumps: %v", dumps)
	}
	if tr, _ := dumps[0]["triggers.list.element.reason"].([]any); len(tr) != 2 || tr[1] != "manual" {
		t.Errorf("dumps.triggers: %#v", dumps[0])
	}
	if tp, _ := dumps[0]["topics.list.element.lost_at_source"].([]any); len(tp) != 2 || tp[1] != int64(3) {
		t.Errorf("dumps.topics: %#v", dumps[0])
	}
	if _, err := Write(testDump(10), dir, Options{Vehicle: "car-9"}); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second write: %v", err)
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"p.x": "p_x", "wheel[2]": "wheel_2", `temps["rear-left"]`: "temps_rear_left", "a.b[1].c": "a_b_1_c"} {
		if got := ColumnName(in); got != want {
			t.Errorf("ColumnName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"edr.demo.Speed": "edr.demo.Speed", "pkg/msg/Imu": "pkg_msg_Imu", "": "untitled", "dumps": "t_dumps", "../x": "_._x"} {
		if got := TableName(in); got != want {
			t.Errorf("TableName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRowGroupsBoundMemory: a table of more than RowGroupRows rows is
// written in several row groups, not held whole.
func TestRowGroupsBoundMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 140k rows")
	}
	dir := t.TempDir()
	n := RowGroupRows/2 + 10 // two messages per step: just over RowGroupRows rows
	if _, err := Write(testDump(n), dir, Options{Vehicle: "v"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, Messages, "vehicle=v/date=2025-12-02/20251202T100640.000000000Z_hard-brake_1.parquet")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != int64(2*n) || len(pf.RowGroups()) != 2 {
		t.Errorf("%d rows in %d row groups, want %d in 2", pf.NumRows(), len(pf.RowGroups()), 2*n)
	}
}
