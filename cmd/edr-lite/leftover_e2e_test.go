package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/pack"
)

// TestRunTidiesLeftovers (issue 32.10): a recorder SIGKILLed while an MCAP
// dump starts leaves a 0-byte NAME.mcap.tmp, which "recover" refuses (the
// file is empty); another killed mid-dump leaves a cut one. The next start
// removes the empty one and keeps the cut one as NAME.mcap.interrupted,
// says so in the log, status (text, JSON) and /metrics, and "recover"
// salvages the kept one.
func TestRunTidiesLeftovers(t *testing.T) {
	src := t.TempDir()
	p := filepath.Join(src, "d.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "leftover-test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := w.Add("sensor/a", "", nil, 0, 1_796_218_342_000_000_000+int64(i)*1e6, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(src, "d.mcap")
	if code, _, errs := runBin(t, "export", "--format", "mcap", p, "-o", full); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	b, _ := os.ReadFile(full)
	const emptyName, cutName = "20261202T101500.000000000Z_manual_1.mcap.tmp", "20261202T101600.000000000Z_manual_2.mcap.tmp"
	if code, _, errs := runBin(t, "recover", writeTemp(t, emptyName, nil), "-o", filepath.Join(src, "x.mcap")); code == 0 || !strings.Contains(errs, "empty") {
		t.Fatalf("recover of an empty leftover: %d %s (the reason the recorder removes them)", code, errs)
	}
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
format = "mcap"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = "$DIR/shm"
[control]
socket = "$DIR/edr.sock"
http = "127.0.0.1:0"
`, nil, func(cmd *exec.Cmd) {
		dumps := filepath.Join(filepath.Dir(cmd.Args[len(cmd.Args)-1]), "dumps")
		os.MkdirAll(dumps, 0o750)
		os.WriteFile(filepath.Join(dumps, emptyName), nil, 0o640)
		os.WriteFile(filepath.Join(dumps, cutName), b[:len(b)*6/10], 0o640)
	})
	dumps := filepath.Join(d.dir, "dumps")
	kept := filepath.Join(dumps, strings.TrimSuffix(cutName, ".tmp")+".interrupted")
	if _, err := os.Stat(filepath.Join(dumps, emptyName)); !os.IsNotExist(err) {
		t.Errorf("empty leftover not removed: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("cut leftover not kept as .interrupted: %v", err)
	}
	logs := d.logs.String()
	if !strings.Contains(logs, "empty leftover") || !strings.Contains(logs, emptyName) || !strings.Contains(logs, "kept as .interrupted") {
		t.Errorf("logs:\n%s", logs)
	}
	_, out, _ := runBin(t, "status", "--socket", d.sock, "--json")
	var st daemon.Status
	json.Unmarshal([]byte(out), &st)
	if len(st.Dumps.LeftoverRemoved) != 1 || len(st.Dumps.LeftoverTmp) != 1 || st.Dumps.LeftoverTmp[0] != kept {
		t.Errorf("status: removed %v kept %v", st.Dumps.LeftoverRemoved, st.Dumps.LeftoverTmp)
	}
	_, out, _ = runBin(t, "status", "--socket", d.sock)
	if !strings.Contains(out, "leftovers removed at start: 1 empty") || !strings.Contains(out, "edr-lite recover "+kept+" -o "+strings.TrimSuffix(kept, ".interrupted")) {
		t.Errorf("status text:\n%s", out)
	}
	metrics := httpGet(t, "http://"+d.httpAddr(t)+"/metrics")
	for _, want := range []string{`edr_dump_leftovers{state="kept"} 1`, `edr_dump_leftovers{state="removed"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, out, _ := runBin(t, "ls", dumps); !strings.Contains(out, "leftover: "+filepath.Base(kept)) {
		t.Errorf("ls:\n%s", out)
	}
	salvaged := filepath.Join(t.TempDir(), "s.mcap")
	if code, out, errs := runBin(t, "recover", kept, "-o", salvaged); code != 0 {
		t.Errorf("recover of the kept leftover: %d %s %s", code, out, errs)
	}
	if code, _, errs := runBin(t, "verify", salvaged); code != 0 {
		t.Errorf("the salvaged dump does not verify: %s", errs)
	}
}

// writeTemp writes b to a file named name in a new directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", name, err))
	}
	return p
}
