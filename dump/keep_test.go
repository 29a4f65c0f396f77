package dump

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// keepSet is a Keeper: it keeps the names in keep until evicted.
type keepSet struct {
	mu      sync.Mutex
	keep    map[string]bool
	evicted []Eviction
}

func (k *keepSet) Keep(p string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keep[filepath.Base(p)]
}

func (k *keepSet) Evicted(e Eviction) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.evicted = append(k.evicted, e)
	delete(k.keep, filepath.Base(e.Path))
}

func (k *keepSet) evictedNames() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, e := range k.evicted {
		out = append(out, filepath.Base(e.Path))
	}
	return out
}

func names(l Listing) []string {
	var out []string
	for _, x := range l.Dumps {
		out = append(out, x.Name)
	}
	return out
}

// TestRotateKeeping: the bounds delete the oldest dumps the Keeper does not
// keep, one at a time and each with the bound it served; kept dumps stand
// beyond the bounds (held), never deleted by them.
func TestRotateKeeping(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.pack", "b.pack", "c.pack", "d.pack", "e.pack", "f.pack"} {
		os.WriteFile(filepath.Join(dir, n), []byte("xx"), 0o644)
	}
	k := &keepSet{keep: map[string]bool{"a.pack": true, "b.pack": true}}
	d := OpenDir(dir)
	// 6 dumps, max_files 2: a and b are kept (held), c and d go
	del, held, err := d.RotateKeeping(2, 0, filepath.Join(dir, "f.pack"), k)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := d.List()
	var got []string
	for _, e := range del {
		got = append(got, filepath.Base(e.Path)+":"+e.Reason)
		if e.Kept {
			t.Errorf("%s deleted as kept", e.Path)
		}
	}
	if want := []string{"c.pack:max_files", "d.pack:max_files"}; !slices.Equal(got, want) || held != 2 ||
		!slices.Equal(names(l), []string{"a.pack", "b.pack", "e.pack", "f.pack"}) || len(k.evicted) != 0 {
		t.Errorf("deleted %v held %d left %v evicted %v; want %v, 2 held", got, held, names(l), k.evicted, want)
	}
	// the bytes bound alone: one dump at a time, only as far as it needs
	del, held, _ = d.RotateKeeping(0, 3, filepath.Join(dir, "f.pack"), k)
	if len(del) != 1 || filepath.Base(del[0].Path) != "e.pack" || del[0].Reason != ReasonMaxTotalBytes || held != 2 {
		t.Errorf("bytes bound: deleted %+v held %d", del, held)
	}
}

// TestMakeRoomDeletesNothingInVain: when deleting every dump it may
// delete would not free what is missing, MakeRoom deletes nothing and says
// what holds the disk; when it can, it deletes the oldest unkept dumps
// first, then the oldest kept, one at a time and no more than needed.
func TestMakeRoomDeletesNothingInVain(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.pack", "b.pack", "c.pack", "d.pack"} {
		os.WriteFile(filepath.Join(dir, n), make([]byte, 8192), 0o644)
	}
	k := &keepSet{keep: map[string]bool{"a.pack": true, "b.pack": true, "d.pack": true}}
	d := OpenDir(dir)
	var all int64
	for _, n := range []string{"a.pack", "b.pack", "c.pack", "d.pack"} {
		all += allocated(filepath.Join(dir, n), 8192)
	}
	del, err := d.MakeRoom(1000, 1000+all+1, "", k)
	var re *RoomError
	if len(del) != 0 || !errorsAs(err, &re) || re.Deletable != all || re.Dumps != 4 {
		t.Fatalf("room that deleting every dump cannot make: deleted %v, %v", del, err)
	}
	if l, _ := d.List(); len(l.Dumps) != 4 || len(k.evicted) != 0 {
		t.Fatalf("deleted in vain: %v, evicted %v", names(l), k.evicted)
	}
	one := allocated(filepath.Join(dir, "a.pack"), 8192)
	// two dumps' room: c (not kept) first, then the oldest kept, a
	del, err = d.MakeRoom(1000, 1000+2*one, "", k)
	if err != nil || len(del) != 2 || filepath.Base(del[0].Path) != "c.pack" || del[0].Kept ||
		filepath.Base(del[1].Path) != "a.pack" || !del[1].Kept || del[1].Reason != ReasonMinFreeDisk {
		t.Fatalf("deleted %+v, %v", del, err)
	}
	if l, _ := d.List(); !slices.Equal(names(l), []string{"b.pack", "d.pack"}) || !slices.Equal(k.evictedNames(), []string{"a.pack"}) {
		t.Fatalf("left %v, evicted %v", names(l), k.evictedNames())
	}
	// enough room already: nothing
	if del, err := d.MakeRoom(5000, 5000, "", k); len(del) != 0 || err != nil {
		t.Fatalf("room there: %v %v", del, err)
	}
}
