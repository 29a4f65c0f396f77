package dump

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
)

// TestDumpFileModes: dumps are 0640 in a 0750 directory by default,
// whatever the umask; FileMode and Group change them; a mode the recorder
// could not write is refused.
func TestDumpFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	write := func(cfg Config) (file, dir os.FileInfo) {
		t.Helper()
		r, vc, d := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Millisecond)}, Dump: cfg})
		ids := discover(t, r, "a")
		feed(r, vc, ids, t0, t0+100*ms, 10*ms)
		id, err := r.Trigger(TriggerParams{Reason: "perm"})
		if err != nil {
			t.Fatal(err)
		}
		feed(r, vc, ids, t0+110*ms, t0+300*ms, 10*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		fi, err := os.Stat(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		di, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		return fi, di
	}
	fi, di := write(Config{})
	if fi.Mode().Perm() != 0o640 || di.Mode().Perm() != 0o750 {
		t.Errorf("default: file %v, dir %v; want 0640 in 0750", fi.Mode().Perm(), di.Mode().Perm())
	}
	gid := os.Getgid()
	if os.Geteuid() == 0 {
		gid = 1 // root may give any group
	}
	fi, di = write(Config{Dir: filepath.Join(t.TempDir(), "d"), FileMode: 0o600, Group: strconv.Itoa(gid)})
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("0600: file %v, dir %v; want 0600 in 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	if g := fi.Sys().(*syscall.Stat_t).Gid; int(g) != gid {
		t.Errorf("file group %d, want %d", g, gid)
	}
	if g := di.Sys().(*syscall.Stat_t).Gid; int(g) != gid {
		t.Errorf("dir group %d, want %d", g, gid)
	}
	for _, bad := range []Config{{FileMode: 0o440}, {FileMode: 0o4640}, {Group: "no-such-group-edr"}} {
		bad.Dir = t.TempDir()
		if _, err := newRig(t, rigConfig{Rec: engine.Config{CacheSize: 4 << 20}, Dump: bad}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
