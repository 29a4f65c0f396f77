package dumptable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
)

// TestMCAPTypedTopic: an MCAP file whose channel carries a type (JSON
// messages with a JSON Schema, as other tools write them) gets a typed
// table through Types(src), with no --schema; an opaque
// channel stays in messages only.
func TestMCAPTypedTopic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "other.mcap")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := mcap.NewWriter(f, mcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := `{"type":"object","properties":{"speed":{"type":"number"},"gear":{"type":"integer"},"label":{"type":"string"}}}`
	typed, err := w.AddTopic(mcap.Topic{Name: "state", Type: ingest.Type{MessageEncoding: "json", Schema: ingest.Schema{Name: "acme.State", Encoding: "jsonschema", Data: []byte(js)}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := w.AddTopic(mcap.Topic{Name: "blob"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		ts := uint64(1_796_000_000_000_000_000) + uint64(i)*1e8
		msg := []byte(`{"speed":` + strings.Repeat("1", i+1) + `.5,"gear":` + string(rune('0'+i)) + `,"label":"x"}`)
		if err := w.WriteMessage(&mcap.Message{ChannelID: typed, LogTime: ts, PublishTime: ts, Data: msg}); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMessage(&mcap.Message{ChannelID: raw, LogTime: ts, PublishTime: ts, Data: []byte{1, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src, err := dumpfile.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, ok := Types(src).TopicType("blob", ""); ok {
		t.Error("an opaque channel has a type")
	}
	out := filepath.Join(dir, "tables")
	rep, err := Export(src, out, Options{Vehicle: "v"})
	if err != nil {
		t.Fatal(err)
	}
	var typedFile string
	for _, f := range rep.Files {
		if f.Table == "acme.State" {
			typedFile = f.Path
			if f.Rows != 5 {
				t.Errorf("typed table rows %d, want 5", f.Rows)
			}
		}
	}
	if typedFile == "" {
		t.Fatalf("no typed table: %+v", rep.Files)
	}
	b, _ := os.ReadFile(typedFile)
	pf, err := parquet.OpenFile(strings.NewReader(string(b)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"speed", "gear"} {
		if _, ok := pf.Schema().Lookup(col); !ok {
			t.Errorf("no %s column in %v", col, pf.Schema())
		}
	}
	if _, ok := pf.Schema().Lookup("label"); ok {
		t.Error("a string field got a column")
	}
	rows := pf.RowGroups()[0].Rows()
	defer rows.Close()
	buf := make([]parquet.Row, 5)
	n, _ := rows.ReadRows(buf)
	leaf, _ := pf.Schema().Lookup("speed")
	if n != 5 || buf[2][leaf.ColumnIndex].Double() != 111.5 {
		t.Errorf("row 2 speed: %v (n %d)", buf[2][leaf.ColumnIndex], n)
	}
}
