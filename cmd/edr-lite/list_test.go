package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenList pins list of each kind, text and JSON, for a pack dump
// and its MCAP export.
func TestGoldenList(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m)
	for _, what := range []string{"topics", "schemas", "triggers", "metadata"} {
		for _, f := range []string{p, m} {
			ext := filepath.Ext(f)[1:]
			checkGolden(t, "list/"+what+"-"+ext+".txt", scrubDir(mustCLI(t, "list", what, f), dir))
			checkGolden(t, "list/"+what+"-"+ext+".json", scrubDir(mustCLI(t, "list", what, f, "--json"), dir))
		}
	}
	if out := mustCLI(t, "list", "channels", m); out != mustCLI(t, "list", "topics", m) {
		t.Error("list channels is not list topics")
	}
	if code, _, errs := runCLI(t, "list", "chunks", p); code != exitUsage || !strings.Contains(errs, "want topics, schemas, triggers, metadata or attachments") {
		t.Errorf("list chunks: code %d, %q", code, errs)
	}
	if code, _, _ := runCLI(t, "list", "topics"); code != exitUsage {
		t.Errorf("list without a file: code %d", code)
	}
}

// TestCompress: compress re-encodes pack and MCAP dumps with each codec,
// and the copy holds the same messages (cat), dump information, metadata
// and schemas, verifies strictly, and (for pack) exports to the same JSON
// lines; a damaged file is refused, and so is an output named for the
// other format.
func TestCompress(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m)
	for _, in := range []string{p, m} {
		ext := filepath.Ext(in)
		wantCat := mustCLI(t, "cat", in, "--jsonl", "--payload", "base64")
		for _, comp := range []string{"zstd", "lz4", "none"} {
			out := filepath.Join(dir, "c-"+comp+ext)
			code, o, errs := runBin(t, "compress", in, "-o", out, "--compression", comp) // the built binary
			if code != 0 {
				t.Fatalf("compress %s: exit %d %s", in, code, errs)
			}
			if !strings.Contains(o, comp+", ") || !strings.Contains(o, "110 messages") {
				t.Errorf("compress %s %s: %s", in, comp, o)
			}
			if code, v, _ := runCLI(t, "verify", "--strict", out); code != exitOK {
				t.Fatalf("compressed file: %s", v)
			}
			if got := mustCLI(t, "cat", out, "--jsonl", "--payload", "base64"); got != wantCat {
				t.Errorf("%s: messages differ after compress", out)
			}
			for _, what := range []string{"triggers", "schemas", "topics"} {
				if a, b := mustCLI(t, "list", what, in), mustCLI(t, "list", what, out); a != b {
					t.Errorf("%s: list %s differs:\n%s\n%s", out, what, a, b)
				}
			}
			info := mustCLI(t, "info", out)
			if comp != "none" && !strings.Contains(info, "compress:   "+comp) {
				t.Errorf("%s: info says\n%s", out, info)
			}
			if ext == ".pack" {
				a := mustCLI(t, "export", in, "-o", "-")
				b := mustCLI(t, "export", out, "-o", "-")
				if a != b { // its provenance (what it was made from) is true of its bytes only: not exported
					t.Errorf("%s: the JSON lines export differs from the input's", out)
				}
			}
		}
	}
	if code, o, _ := runBin(t, "list", "triggers", "--json", p); code != 0 || !strings.Contains(o, `"time":"2025-12-02T10:06:40.5Z"`) {
		t.Errorf("list triggers --json through the binary: %d %s", code, o)
	}
	checkGolden(t, "compress.txt", scrubDir(mustCLI(t, "compress", p, "-o", filepath.Join(dir, "g.pack")), dir))
	b, _ := os.ReadFile(p)
	bad := filepath.Join(dir, "bad.pack")
	b[len(b)/3] ^= 0x40
	os.WriteFile(bad, b, 0o644)
	code, _, errs := runCLI(t, "compress", bad, "-o", filepath.Join(dir, "x.pack"))
	if code != exitFail || !strings.Contains(errs, "is damaged") || !strings.Contains(errs, "edr-lite recover") {
		t.Errorf("compress of a damaged dump: code %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.pack")); err == nil {
		t.Error("a refused compress left its output")
	}
	// compress writes its input's format: an output named for the other
	// one is refused, not written under the wrong name
	for in, out := range map[string]string{p: "p.mcap", m: "m.pack"} {
		code, _, errs := runBin(t, "compress", in, "-o", filepath.Join(dir, out))
		if code != exitUsage || !strings.Contains(errs, "compress writes the same format: name the output .") {
			t.Errorf("compress %s -o %s: exit %d, %q", in, out, code, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, out)); err == nil {
			t.Errorf("a refused compress left %s", out)
		}
	}
}

// TestE2EInputGivenTwice: a verb that reads its inputs as one stream
// refuses the same file given twice (by another spelling, or through a
// link) instead of doubling its messages and triggers; two files pass.
func TestE2EInputGivenTwice(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	q := writeTestDump(t, dir, "b.pack")
	link := filepath.Join(dir, "link.pack")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pack")
	for _, args := range [][]string{
		{"merge", p, p, "-o", out},
		{"merge", p, link, "-o", out},
		{"filter", p, filepath.Join(dir, ".", "a.pack"), "-o", out},
		{"split", p, p, "--duration", "1s", "-o", out},
		{"replay", p, link, "-o", "discard", "--asfast"},
		{"export", "--format", "parquet", p, p, "-o", filepath.Join(dir, "tables")},
		{"report", p, p, "-o", filepath.Join(dir, "r.html")},
		{"rules", "test", "--rules", "builtin:hard_brake", p, link},
	} {
		code, _, errs := runBin(t, args...)
		if code != exitUsage || !strings.Contains(errs, "is given twice") || !strings.Contains(errs, "its messages would be read twice") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v left %s", args, out)
		}
	}
	if code, o, errs := runBin(t, "merge", p, q, "-o", out); code != 0 || !strings.Contains(o, "2 inputs") {
		t.Errorf("merge of two files: exit %d %s %s", code, o, errs)
	}
}
