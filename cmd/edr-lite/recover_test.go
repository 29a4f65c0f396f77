package main

import (
	"os"

	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
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
	code, out, errs = runBin(t, "merge", cut, p, "-o", merged)
	if code != 0 || !strings.Contains(errs, "warning: "+cut+" cannot be read as it is") {
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

// TestVerifyStrict: verify --strict passes our dumps and exports, and
// reports, with exit 1, a recovered pack dump whose dump information still
// counts the messages lost, and an MCAP file whose statistics disagree
// with its data (its CRC rewritten, so only conformance catches it).
func TestVerifyStrict(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m, "--compression", "zstd")
	code, out, errs := runCLI(t, "verify", "--strict", p, m)
	if code != exitOK || strings.Count(out, ": ok, conformant, ") != 2 {
		t.Fatalf("verify --strict: code %d\n%s%s", code, out, errs)
	}
	// a dump whose information counts messages the file does not hold (a
	// writer that lost some)
	rec := filepath.Join(dir, "stale.pack")
	w, err := pack.Create(rec, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.Add("vehicle/speed", "", nil, 0, t0+int64(i)*1e6, []byte{1, 2, 3, 4})
	}
	w.SetDumpInfo(dumpinfo.Info{StartNs: t0, EndNs: t0 + 1e9,
		Topics: []dumpinfo.TopicAccount{{Topic: "vehicle/speed", Messages: 5, Bytes: 20}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
		t.Fatalf("the stale dump must verify: %s", out)
	}
	code, out, _ = runCLI(t, "verify", "--strict", rec)
	if code != exitFail || !strings.Contains(out, "dump info: topic vehicle/speed: 5 messages, 20 bytes; the file holds 3, 12") {
		t.Fatalf("verify --strict of a stale dump: code %d\n%s", code, out)
	}
	checkGolden(t, "verify-strict.txt", scrubDir(out, dir))

	// an MCAP file whose Statistics miscount, its summary CRC made right
	mb, _ := os.ReadFile(m)
	bad := filepath.Join(dir, "stats.mcap")
	os.WriteFile(bad, miscount(t, mb), 0o644)
	if code, out, _ := runCLI(t, "verify", bad); code != exitOK {
		t.Fatalf("the edited MCAP must still verify: %s", out)
	}
	code, out, _ = runCLI(t, "verify", "--strict", bad)
	if code != exitFail || !strings.Contains(out, "Statistics.metadata_count") {
		t.Fatalf("verify --strict of miscounting statistics: code %d\n%s", code, out)
	}
	checkGolden(t, "verify-strict-mcap.txt", scrubDir(out, dir))
}
