package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
)

// TestE2EDumpWriterTyped: a dump written by a Go program through the
// public dumpfile.Writer (pack and MCAP) carries its types as the
// recorder's dumps do: the messages read back with their types, "info"
// shows each topic's encoding and type (and, in pack, the change of the
// speed topic's layout), "cat --decode" prints exactly what it prints for the
// same messages written the recorder's way, "verify" passes. Through the
// built binary.
func TestE2EDumpWriterTyped(t *testing.T) {
	dir := t.TempDir()
	msgs := typedTestMessages()
	ref := filepath.Join(dir, "reference.pack")
	writeTypedDump(t, ref, msgs)
	bin := func(args ...string) string {
		t.Helper()
		code, out, errs := runBin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	wantDecode := bin("cat", "--decode", ref)
	for _, format := range []string{dumpfile.FormatPack, dumpfile.FormatMCAP} {
		path := filepath.Join(dir, "written."+format)
		w, err := dumpfile.Create(path, dumpfile.WriterOptions{Format: format, Writer: "a Go program"})
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]ingest.Type{}
		for _, m := range msgs {
			if typ, ok := last[m.name]; !ok || !typ.Equal(m.typ) {
				if err := w.SetType(m.name, m.typ); err != nil {
					t.Fatal(err)
				}
				last[m.name] = m.typ
			}
			if err := w.Write(m.name, m.t, m.t-100, m.data); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		sameTyped(t, format, readTyped(t, path), msgs)
		if got := bin("cat", "--decode", path); got != wantDecode {
			t.Errorf("%s: cat --decode differs from the recorder-written dump's:\n%s\nwant\n%s", format, firstLines(got, 4), firstLines(wantDecode, 4))
		}
		var in struct {
			Writer string
			Topics []struct {
				Name, Type, Encoding string
				TypeChanges          []struct{ Type, Encoding string } `json:"type_changes"`
				Messages             uint64
			}
		}
		if err := json.Unmarshal([]byte(bin("info", "--json", path)), &in); err != nil {
			t.Fatal(err)
		}
		speed := ingest.EncodingPacked
		if format == dumpfile.FormatMCAP {
			speed = ingest.EncodingJSON // MCAP stores packed structs transcoded to JSON, with a JSON Schema
		}
		want := map[string][2]string{"vehicle/speed": {speed, "vehicle.Speed"}, "clock": {"protobuf", "google.protobuf.Timestamp"},
			"calibration": {"json", "vehicle.Calibration"}, "blob": {ingest.EncodingRaw, "vendor.Blob"}}
		for _, tp := range in.Topics {
			if w := want[tp.Name]; tp.Encoding != w[0] || tp.Type != w[1] {
				t.Errorf("%s: info: topic %s: %s %s, want %s %s", format, tp.Name, tp.Encoding, tp.Type, w[0], w[1])
			}
			// MCAP: both layouts transcode to the same JSON Schema, one type
			// as stored (the layouts are kept: readTyped above sees both)
			if (tp.Name == "vehicle/speed" && format == dumpfile.FormatPack) != (len(tp.TypeChanges) == 1) {
				t.Errorf("%s: info: topic %s: type changes %+v", format, tp.Name, tp.TypeChanges)
			}
		}
		if len(in.Topics) != 4 || in.Writer != "a Go program" {
			t.Errorf("%s: info: %+v", format, in)
		}
		bin("verify", path)
	}
}
