package table

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// TestWriteFileMode (issue 32.8): with Options.FileMode the tables and the
// directories Write makes get that mode (with search bits), whatever the
// umask; without, 0644 and 0755 as before.
func TestWriteFileMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	d := &Dump{ID: "d1", File: "d1.pack", Format: "pack", Info: dumpinfo.Info{StartNs: 1_796_218_342_000_000_000},
		Topics: []Topic{{Name: "a", Messages: 1}},
		Walk: func(fn func(m *Message) error) error {
			return fn(&Message{Name: "a", CaptureNs: 1_796_218_342_000_000_000, Data: []byte("x")})
		}}
	for _, c := range []struct {
		mode, file, dir os.FileMode
	}{{0o600, 0o600, 0o700}, {0o640, 0o640, 0o750}, {0, 0o644, 0o755}} {
		out := t.TempDir()
		rep, err := Write(d, out, Options{Vehicle: "v", FileMode: c.mode, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Files {
			st, _ := os.Stat(f.Path)
			if st.Mode().Perm() != c.file {
				t.Errorf("mode %04o: %s is %04o, want %04o", c.mode, f.Path, st.Mode().Perm(), c.file)
			}
			for dir := filepath.Dir(f.Path); dir != out; dir = filepath.Dir(dir) {
				if st, _ := os.Stat(dir); st.Mode().Perm() != c.dir {
					t.Errorf("mode %04o: %s is %04o, want %04o", c.mode, dir, st.Mode().Perm(), c.dir)
				}
			}
		}
	}
}
