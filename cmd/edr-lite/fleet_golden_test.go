package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/upload"
)

// TestGoldenLsUpload pins ls of a directory with an upload queue: one dump
// confirmed (in the ledger), one failed (in the journal with its error),
// one unknown to the queue yet.
func TestGoldenLsUpload(t *testing.T) {
	dir := t.TempDir()
	writeTestDump(t, dir, "20261202T101500Z_hard-brake_0001.pack")
	writeTestDump(t, dir, "20261202T101600Z_hard-brake_0002.pack")
	writeTestDump(t, dir, "20261202T101700Z_hard-brake_0003.pack")
	os.WriteFile(filepath.Join(dir, upload.LedgerName), []byte(`{"file":"20261202T101500Z_hard-brake_0001.pack","size":14000,"crc32c":"AAAAAA==","key":"edr/vehicle=car-1/date=2026-12-02/20261202T101500Z_hard-brake_0001.pack","at_ns":1}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, upload.JournalName), []byte(`{"version":1,"queue":[{"file":"20261202T101600Z_hard-brake_0002.pack","size":14000,"queued_ns":1,"attempts":3,"last_error":"upload: credentials rejected by the server: InvalidAccessKeyId"}]}`), 0o644)
	code, out, errs := runCLI(t, "ls", dir)
	if code != exitOK || errs != "" {
		t.Fatalf("ls: code %d, stderr %q", code, errs)
	}
	checkGolden(t, "ls-upload.txt", scrubDir(out, dir))
}

// TestGoldenExportParquet pins what export --format parquet prints: per
// dump the counts, the tables with their rows, the notes.
func TestGoldenExportParquet(t *testing.T) {
	dir := t.TempDir()
	a := writeTestDump(t, dir, "a.pack")
	b := writeBrakeDump(t, dir)
	layout := filepath.Join(dir, "edr.demo.Speed.layout")
	os.WriteFile(layout, []byte("f32le speed (m/s)\n"), 0o644)
	code, out, errs := runCLI(t, "export", "--format", "parquet", "-o", filepath.Join(dir, "tables"), "--vehicle", "car-1",
		"--schema", "vehicle/speed="+layout, a, b)
	if code != exitOK || errs != "" {
		t.Fatalf("export: code %d, stderr %q", code, errs)
	}
	checkGolden(t, "export-parquet.txt", scrubDir(out, dir))
	code, _, errs = runCLI(t, "export", "--format", "parquet", "-o", filepath.Join(dir, "tables"), "--vehicle", "car-1", a)
	if code != exitFail || errs == "" {
		t.Errorf("export over existing files: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "export", "--format", "parquet", a); code != exitUsage {
		t.Errorf("no -o: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "export", "--format", "parquet", "-o", dir, "--schema", "x=/nonexistent", a); code != exitUsage {
		t.Errorf("bad --schema: %d %q", code, errs)
	}
	// a --schema of a topic no input has (a typo): a warning naming it and
	// the topics there are, the tables written
	code, _, errs = runBin(t, "export", "--format", "parquet", "-o", filepath.Join(dir, "tables2"), "--schema", "vehicle/sped="+layout, a)
	if code != 0 || !strings.Contains(errs, "warning: --schema vehicle/sped: no input has this topic, not used (their topics: ") || !strings.Contains(errs, "vehicle/speed") {
		t.Errorf("--schema of a topic not there: exit %d %q", code, errs)
	}
}
