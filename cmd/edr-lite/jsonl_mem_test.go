package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportLongLineMemory: importing a JSON-lines export whose one message
// line is 64 MiB (48 MiB of data) stays within the readers' bound of 256
// MiB of peak resident memory (issue 32 item 15: it peaked at 306 MB, the
// line buffer's growth, a copy of the base64 text and of the decoded data
// on top of the frame's own copy). Measured as the hostile-input tests do:
// the child's ru_maxrss.
func TestImportLongLineMemory(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "long.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 48<<20)
	rand.Read(data) // incompressible, as an image would be
	w := bufio.NewWriter(f)
	w.WriteString(`{"format":"edr-lite-jsonl","version":1,"topics":[{"topic":"cam","name":"cam","messages":2}]}` + "\n")
	w.WriteString(`{"seq":0,"topic":"cam","ts":1000,"gen_ts":900,"data":"`)
	enc := base64.NewEncoder(base64.StdEncoding, w)
	enc.Write(data)
	enc.Close()
	w.WriteString(`"}` + "\n")
	w.WriteString(`{"seq":1,"topic":"cam","ts":2000,"gen_ts":1900,"data":"AAEC"}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "long.pack")
	r := runLimited(t, "import", "--format", "jsonl", in, "-o", out)
	if r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	t.Logf("import of a 64 MiB line: peak RSS %d MiB", r.rss>>20)
	if r.rss > hostileMaxRSS {
		t.Errorf("import of a 64 MiB line: peak RSS %d MiB, over the bound of %d MiB", r.rss>>20, hostileMaxRSS>>20)
	}
	// What was imported is what was written.
	code, stdout, errs := runBin(t, "export", "--format", "jsonl", out, "-o", "-")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	lines := strings.Split(stdout, "\n")
	if len(lines) != 4 || lines[1] != `{"seq":0,"topic":"cam","ts":1000,"gen_ts":900,"data":"`+base64.StdEncoding.EncodeToString(data)+`"}` ||
		lines[2] != `{"seq":1,"topic":"cam","ts":2000,"gen_ts":1900,"data":"AAEC"}` {
		t.Errorf("the export of the import differs: %d lines", len(lines))
	}
}
