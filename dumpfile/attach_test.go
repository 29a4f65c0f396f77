package dumpfile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/pack"
)

// writeAttachedPack writes a one-message pack dump with metadata and
// attachments.
func writeAttachedPack(t *testing.T, path string, md map[string]string, atts ...pack.Attachment) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w.Add("a", "", nil, r0, r0, []byte{1})
	for n, v := range md {
		w.AddMetadata(n, []byte(v))
	}
	for _, a := range atts {
		if err := w.AddAttachment(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeAttachmentsAndMetadata: a merge to pack keeps every input's
// attachments (one written once when two inputs carry it alike), a pack
// metadata section two inputs hold alike once, MCAP records of one name
// from two inputs all (one section: their array), and for different bytes
// of another kind the first input's, said in the report; a merge to MCAP
// keeps them all.
func TestMergeAttachmentsAndMetadata(t *testing.T) {
	dir := t.TempDir()
	cfg := pack.Attachment{Name: "config.toml", MediaType: "application/toml", Data: []byte("x = 1\n"), LogNs: r0}
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeAttachedPack(t, a, map[string]string{"same": "s", "calib": "\x01", "robot": `{"name":"r2"}`}, cfg,
		pack.Attachment{Name: "map", Data: []byte{1, 2}})
	writeAttachedPack(t, b, map[string]string{"same": "s", "calib": "\x02", "robot": `{"name":"r3"}`}, cfg,
		pack.Attachment{Name: "map", Data: []byte{3}})
	for _, format := range []string{FormatPack, FormatMCAP} {
		out := filepath.Join(dir, "merged."+format)
		rep, err := Rewrite([]*Source{openOne(t, a), openOne(t, b)}, Output{Path: out}, RewriteOptions{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		src := openOne(t, out)
		as, err := src.Attachments()
		if err != nil || len(as) != 3 || rep.Attachments != 3 || as[0].Name != "config.toml" || string(as[2].Data) != "\x03" {
			t.Errorf("%s: %d attachments (%d reported): %+v, %v", format, len(as), rep.Attachments, as, err)
		}
		if format == FormatMCAP {
			if len(rep.Notes) != 0 {
				t.Errorf("mcap: notes %q", rep.Notes)
			}
			continue
		}
		r := src.Pack()
		if got, _ := r.Metadata("robot"); string(got) != `[{"name":"r2"},{"name":"r3"}]` {
			t.Errorf("robot: %q", got)
		}
		if got, _ := r.Metadata("calib"); string(got) != "\x01" {
			t.Errorf("calib: %q", got)
		}
		if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], `metadata "calib" of `+b) || !strings.Contains(rep.Notes[0], "kept the one of "+a) {
			t.Errorf("notes %q", rep.Notes)
		}
	}
}
