package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/jsonl"
	"github.com/edr-lite/edr-lite/pack"
)

// importBytes imports a JSON-lines export held in memory into an in-memory
// pack file.
func importBytes(in []byte) (*jsonl.Report, []byte, error) {
	var out bytes.Buffer
	rep, err := jsonl.Import(bytes.NewReader(in), func(o pack.WriterOptions) (*pack.Writer, error) {
		return pack.NewStreamWriter(&out, o)
	})
	return rep, out.Bytes(), err
}

func exportBytes(t *testing.T, file []byte) []byte {
	r, err := pack.NewBytesReader("imported", file, pack.ReaderOptions{})
	if err != nil {
		t.Fatalf("an imported file does not open: %v", err)
	}
	defer r.Close()
	var b bytes.Buffer
	src, err := dumpfile.FromPack(r)
	if err != nil {
		t.Fatalf("an imported file's types do not read: %v", err)
	}
	if _, err := dumpfile.Export(src, dumpfile.FormatJSONL, &b, dumpfile.ExportOptions{}); err != nil {
		t.Fatalf("an imported file does not export: %v", err)
	}
	return b.Bytes()
}

// FuzzImportJSONL feeds arbitrary text to the JSON-lines importer.
// Properties: no panic; an error wraps jsonl.ErrFormat (or the pack
// writer's) and comes with no report; an accepted input gives a pack file
// that verifies, whose export imports again to the same export (the
// round trip is a fixed point).
func FuzzImportJSONL(f *testing.F) {
	hdr := `{"format":"edr-lite-jsonl","version":1,"topics":[{"topic":"a","name":"a"},{"topic":"b#c","name":"b","channel":"c","type":"t"}],"dump_info":{"triggers":[{"id":1,"reason":"r","time_ns":5,"pre_ns":1,"post_ns":1}]},"metadata":{"m":"AAE="}}` + "\n"
	f.Add([]byte(hdr))
	f.Add([]byte(hdr + `{"seq":0,"topic":"a","ts":10,"gen_ts":9,"data":"AQID"}` + "\n" + `{"seq":1,"topic":"b#c","ts":11,"gen_ts":0,"done_ts":0,"meta":"eA==","data":""}` + "\n"))
	f.Add([]byte(hdr + `{"seq":0,"topic":"a","ts":10,"gen_ts":9}`))
	f.Add([]byte(`{"format":"edr-lite-jsonl","version":1}` + "\n\n"))
	f.Add([]byte("{}\n"))
	// Types: a header table (ids are content IDs) and a change of type on
	// a message line.
	a, b := ingest.Packed("v.S", "u8 a"), ingest.Packed("v.S", "u16le a")
	typed := fmt.Sprintf(`{"format":"edr-lite-jsonl","version":1,"topics":[{"topic":"s","name":"s","type_id":"%s"}],`+
		`"types":[{"id":"%s","encoding":"x-edr-packed","schema_name":"v.S","schema_encoding":"x-edr-layout","schema":"dTggYQ=="},`+
		`{"id":"%s","encoding":"x-edr-packed","schema_name":"v.S","schema_encoding":"x-edr-layout","schema":"dTE2bGUgYQ=="}]}`+"\n"+
		`{"seq":0,"topic":"s","ts":10,"gen_ts":9,"data":"AQ=="}`+"\n"+
		`{"seq":1,"topic":"s","ts":11,"gen_ts":10,"type_id":"%s","data":"AQI="}`+"\n", a.ID(), a.ID(), b.ID(), b.ID())
	f.Add([]byte(typed))
	// data decoded in place (jsonl/b64.go): escapes, more than one block,
	// padding.
	f.Add([]byte(hdr + `{"seq":0,"topic":"a","ts":10,"gen_ts":9,"data":"AA\/C\u0041A=="}` + "\n"))
	f.Add([]byte(hdr + `{"seq":0,"topic":"a","ts":10,"gen_ts":9,"data":"` + strings.Repeat("QUJD", 1500) + `RA=="}` + "\n"))
	// Attachments in the header, and a producer's sequence on a line.
	f.Add([]byte(`{"format":"edr-lite-jsonl","version":1,"topics":[{"topic":"a","name":"a"}],"attachments":[{"name":"c.toml","media_type":"application/toml","log_ns":5,"data":"eA=="},{"name":"","data":null}]}` + "\n" +
		`{"seq":0,"topic":"a","ts":10,"gen_ts":9,"sequence":4294967296,"data":"AQID"}` + "\n"))
	addHostile(f, ".jsonl")
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, file, err := importBytes(in)
		if err != nil {
			if rep != nil {
				t.Fatalf("error %v with a report %+v", err, rep)
			}
			if !errors.Is(err, jsonl.ErrFormat) {
				t.Logf("non-format error: %v", err) // e.g. a name the pack writer refuses
			}
			return
		}
		if v := pack.VerifyBytes("imported", file); !v.OK() || !v.Complete {
			t.Fatalf("imported file does not verify: %+v", v.Problems)
		}
		once := exportBytes(t, file)
		_, file2, err := importBytes(once)
		if err != nil {
			t.Fatalf("re-import of an export failed: %v\n%s", err, once)
		}
		if twice := exportBytes(t, file2); !bytes.Equal(once, twice) {
			t.Fatalf("export is not a fixed point:\n%s\n---\n%s", once, twice)
		}
	})
}
