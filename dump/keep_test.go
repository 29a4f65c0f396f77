package dump

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type keepSet struct {
	keep    map[string]bool
	evicted []string
}

func (k *keepSet) Keep(p string) bool { return k.keep[filepath.Base(p)] }
func (k *keepSet) Evicted(p, why string) {
	k.evicted = append(k.evicted, filepath.Base(p))
	delete(k.keep, filepath.Base(p))
}

func TestRotateKeeping(t *testing.T) {
	f := func(critical bool, wantLeft, wantEvicted []string, wantHeld int) {
		t.Helper()
		dir := t.TempDir()
		for _, n := range []string{"a.pack", "b.pack", "c.pack", "d.pack", "e.pack"} {
			os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
		}
		k := &keepSet{keep: map[string]bool{"a.pack": true, "b.pack": true}}
		d := OpenDir(dir)
		_, held, err := d.RotateKeeping(2, 0, filepath.Join(dir, "e.pack"), k, critical)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := d.List()
		var left []string
		for _, x := range l.Dumps {
			left = append(left, x.Name)
		}
		if !slices.Equal(left, wantLeft) || !slices.Equal(k.evicted, wantEvicted) || held != wantHeld {
			t.Errorf("critical=%v: left %v evicted %v held %d, want %v %v %d", critical, left, k.evicted, held, wantLeft, wantEvicted, wantHeld)
		}
	}
	// queued a and b stay beyond max_files 2; c and d go; e was just written
	f(false, []string{"a.pack", "b.pack", "e.pack"}, nil, 1)
	// critically low disk: a queued dump goes too (oldest first), as far as the bound needs
	f(true, []string{"b.pack", "e.pack"}, []string{"a.pack"}, 0)
}
