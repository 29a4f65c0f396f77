package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportImportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	js := filepath.Join(dir, "a.jsonl")
	if code, out, errs := runCLI(t, "export", "--format", "jsonl", dump, "-o", js); code != exitOK || !strings.Contains(out, "2 topics, 110 messages") {
		t.Fatalf("export: code %d, %q %q", code, out, errs)
	}
	code, stdout, _ := runCLI(t, "export", "--format", "jsonl", dump, "-o", "-")
	file, _ := os.ReadFile(js)
	if code != exitOK || stdout != string(file) || !strings.HasPrefix(stdout, `{"format":"edr-lite-jsonl","version":1,`) {
		t.Fatalf("export to stdout: code %d, differs from the file", code)
	}
	back := filepath.Join(dir, "back.pack")
	if code, out, errs := runCLI(t, "import", "--format", "jsonl", js, "-o", back, "--compression", "zstd"); code != exitOK || !strings.Contains(out, "110 messages") {
		t.Fatalf("import: code %d, %q %q", code, out, errs)
	}
	// the trigger survived, and the messages are the same
	_, a, _ := runCLI(t, "cat", dump)
	_, b, _ := runCLI(t, "cat", back)
	if a != b || a == "" {
		t.Errorf("cat differs after the round trip")
	}
	if _, info, _ := runCLI(t, "info", back); !strings.Contains(info, "hard-brake") {
		t.Errorf("trigger lost: %s", info)
	}
	_, again, _ := runCLI(t, "export", "--format", "jsonl", back, "-o", "-")
	if again != stdout {
		t.Errorf("re-export differs")
	}
	// refuse to overwrite
	if code, _, errs := runCLI(t, "import", js, "-o", back); code != exitFail || !strings.Contains(errs, "refusing to overwrite") {
		t.Errorf("overwrite: code %d %q", code, errs)
	}
}

// TestExportMCAP exports to MCAP and reads it back with the offline verbs:
// the same messages (cat) and the trigger (info).
func TestExportMCAP(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	for _, comp := range []string{"none", "lz4", "zstd"} {
		out := filepath.Join(dir, "a-"+comp+".mcap")
		code, stdout, errs := runCLI(t, "export", "--format", "mcap", "--compression", comp, dump, "-o", out)
		if code != exitOK || !strings.Contains(stdout, "110 messages") {
			t.Fatalf("%s: code %d, %q %q", comp, code, stdout, errs)
		}
		_, a, _ := runCLI(t, "cat", dump)
		_, b, _ := runCLI(t, "cat", out)
		if a != b || a == "" {
			t.Errorf("%s: cat of the MCAP export differs from the pack dump", comp)
		}
		if _, info, _ := runCLI(t, "info", out); !strings.Contains(info, "hard-brake") || !strings.Contains(info, "mcap") {
			t.Errorf("%s: info %s", comp, info)
		}
	}
}

func TestExportImportErrors(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	f := func(want int, has string, args ...string) {
		t.Helper()
		code, _, errs := runCLI(t, args...)
		if code != want || !strings.Contains(errs, has) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", args, code, errs, want, has)
		}
	}
	f(exitUsage, "--format", "export", "--format", "csv", dump, "-o", "-")
	f(exitUsage, "--compression", "export", "--format", "mcap", "--compression", "gzip", dump, "-o", "-")
	f(exitUsage, "-o OUT is required", "export", dump)
	f(exitFail, `export.go: not a pack, MCAP, JSON lines, MP4, candump log or ASC file: it starts with "package "`, "export", "export.go", "-o", "-")
	bad := filepath.Join(dir, "bad.jsonl")
	_, good, _ := runCLI(t, "export", dump, "-o", "-")
	lines := strings.SplitAfter(good, "\n")
	os.WriteFile(bad, []byte(lines[0]+lines[1]+lines[3]), 0o644)
	out := filepath.Join(dir, "bad.pack")
	f(exitFail, "line 3: seq 2, want 1", "import", bad, "-o", out)
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed import left its output")
	}
	if _, err := os.Stat(out + ".tmp"); err == nil {
		t.Error("a failed import left its .tmp")
	}
	f(exitUsage, "-o OUT is required", "import", bad)
	f(exitFail, "no such file", "import", filepath.Join(dir, "none.jsonl"), "-o", out)
}
