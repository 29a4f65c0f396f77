package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedMCAP: info and merge read what a cut MCAP file holds and
// say so, instead of failing; recover makes a file that verifies with
// every message info counted.
func TestTruncatedMCAP(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m) // one uncompressed chunk: the cut falls inside it
	b, _ := os.ReadFile(m)
	cut := filepath.Join(dir, "cut.mcap")
	os.WriteFile(cut, b[:len(b)/3], 0o644)

	code, out, errs := runCLI(t, "info", cut)
	if code != exitOK || !strings.Contains(out, "damaged:    offset ") || !strings.Contains(out, "edr-lite recover") {
		t.Fatalf("info of a cut MCAP: code %d\n%s%s", code, out, errs)
	}
	checkGolden(t, "info-cut-mcap.txt", scrubDir(out, dir))
	in := readInfoJSON(t, cut)
	if in.Messages == 0 || in.Messages >= 110 {
		t.Errorf("info --json of the cut file counts %d messages", in.Messages)
	}

	merged := filepath.Join(dir, "m.pack")
	code, out, errs = runCLI(t, "merge", cut, p, "-o", merged)
	if code != exitOK || !strings.Contains(errs, "warning: "+cut+" cannot be read as it is") {
		t.Fatalf("merge with a cut MCAP: code %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "verify", merged); code != exitOK {
		t.Fatalf("merged file does not verify: %s", out)
	}
	if got := readInfoJSON(t, merged); got.Messages != 110+in.Messages {
		t.Errorf("merged %d messages, want 110 + %d", got.Messages, in.Messages)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "edr-lite-salvage-*")); len(left) != 0 {
		t.Errorf("salvaged copies left behind: %v", left)
	}

	rec := filepath.Join(dir, "rec.mcap")
	code, out, errs = runCLI(t, "recover", cut, "-o", rec)
	if code != exitOK {
		t.Fatalf("recover: %d %s%s", code, out, errs)
	}
	checkGolden(t, "recover-mcap.txt", scrubDir(out, dir))
	if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
		t.Fatalf("recovered file does not verify: %s", out)
	}
	if got := readInfoJSON(t, rec); got.Messages != in.Messages {
		t.Errorf("recovered %d messages, info said %d", got.Messages, in.Messages)
	}
}
