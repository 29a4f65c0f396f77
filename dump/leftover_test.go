package dump

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/engine"
)

// TestLeftoversAtStart (issue 32.10): a dumper starting on a directory
// with leftovers of an interrupted run removes the empty ones (a crash
// right after the file was created: nothing to salvage) and renames the
// others NAME.interrupted, content untouched; both are reported.
func TestLeftoversAtStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(dir, 0o750)
	empty := filepath.Join(dir, "20261202T101500.000000000Z_a_1.mcap.tmp")
	cut := filepath.Join(dir, "20261202T101600.000000000Z_b_2.mcap.tmp")
	old := filepath.Join(dir, "20261202T101700.000000000Z_c_3.mcap.interrupted")
	other := filepath.Join(dir, "notes.tmp")
	os.WriteFile(empty, nil, 0o640)
	os.WriteFile(cut, []byte("\x89MCAP0\r\npartial"), 0o640)
	os.WriteFile(old, []byte("\x89MCAP0\r\nolder"), 0o640)
	os.WriteFile(other, nil, 0o640)
	r, err := newRig(t, rigConfig{Rec: engine.Config{CacheSize: 1 << 20}, Dump: Config{Dir: dir, Extension: MCAPExt}})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Status()
	kept := filepath.Join(dir, "20261202T101600.000000000Z_b_2.mcap.interrupted")
	if !slices.Equal(s.LeftoverRemoved, []string{empty}) || !slices.Equal(s.LeftoverTmp, []string{kept, old}) || s.LastError != "" {
		t.Fatalf("removed %v, kept %v (%s)", s.LeftoverRemoved, s.LeftoverTmp, s.LastError)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("empty leftover still there: %v", err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "\x89MCAP0\r\npartial" {
		t.Errorf("kept leftover: %q %v", b, err)
	}
	if _, err := os.Stat(cut); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", cut, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is no leftover of a dump was touched: %v", err)
	}
	l, _ := OpenDir(dir, MCAPExt).List()
	if len(l.Leftovers) != 2 || len(l.Dumps) != 0 || LeftoverName(kept) != filepath.Join(dir, "20261202T101600.000000000Z_b_2.mcap") {
		t.Errorf("listing %+v", l)
	}
}
