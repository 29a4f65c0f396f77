package dump

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// tmpfsDir mounts a tmpfs of size bytes for the test, or skips saying why.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	testutil.SkipUnlessRoot(t, "to mount a small tmpfs as the dump directory")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		testutil.SkipIfNotSupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestRotationMakesRoomOneDumpAtATime (issue 32.4): max_files 2 and
// min_free_disk 3MiB on a 10 MiB tmpfs, every dump queued (kept): the
// queued dumps stand beyond max_files while there is room; once a new dump
// needs room, the oldest queued dump goes, one per new dump — not down to
// max_files at once — each counted with its reason.
func TestRotationMakesRoomOneDumpAtATime(t *testing.T) {
	dir := tmpfsDir(t, "10m")
	k := &keepSet{keep: map[string]bool{}}
	r, vc, _ := dumpRecorder(t, rigConfig{
		Rec:  engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0)), CacheSize: 8 << 20, TopicBytes: 2 << 20},
		Dump: Config{Dir: dir, Policy: PolicySeparate, MaxFiles: 2, MinFreeDisk: 3 << 20, Keeper: k, FrameSize: 256 << 10}})
	ids := discover(t, r, "big")
	payload := make([]byte, 4096)
	var paths []string
	for i := range 10 {
		base := t0 + int64(i)*2000*ms
		for ns := base; ns <= base+1000*ms; ns += 4 * ms { // 251 x 4 KiB
			vc.Set(ns)
			r.Ingest(ids["big"], ns-1, payload)
		}
		id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("q", i)})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(base + 1100*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatalf("dump %d: %v", i, res.Err)
		}
		k.mu.Lock()
		k.keep[filepath.Base(res.Path)] = true // queued: the server is down
		k.mu.Unlock()
		paths = append(paths, res.Path)
		var st unix.Statfs_t
		unix.Statfs(dir, &st)
		free := int64(st.Bavail) * int64(st.Bsize)
		ev := k.evictedNames()
		// a dump needs ~1.1 MiB + 3 MiB free: 6 fit in 10 MiB, then
		// each new one takes the room of exactly one old one
		want := max(0, i-5)
		if len(ev) != want {
			t.Fatalf("after dump %d (%s free): %d evicted %v, want %d (one per dump that needed room)", i, fmtMiB(free), len(ev), ev, want)
		}
		for j, n := range ev {
			if n != filepath.Base(paths[j]) {
				t.Fatalf("evicted %v, want the oldest first", ev)
			}
		}
	}
	st := r.Status()
	if st.Rotated != 4 || st.RotatedFor[ReasonMinFreeDisk] != 4 || st.RotatedFor[ReasonMaxFiles] != 0 || st.RefusedDisk != 0 {
		t.Errorf("status: rotated %d %v, refused %d", st.Rotated, st.RotatedFor, st.RefusedDisk)
	}
	for _, e := range k.evicted {
		if e.Reason != ReasonMinFreeDisk || !e.Kept || !strings.Contains(e.Why, "min_free_disk") {
			t.Errorf("eviction %+v", e)
		}
	}
}

func fmtMiB(n int64) string { return fmt.Sprintf("%.2fMiB", float64(n)/(1<<20)) }

// TestRotationNeverDeletesInVain (issue 32.3): with the disk filled by
// another file, a dump that deleting every dump would not make room for is
// refused, nothing deleted, and the error says what holds the disk.
func TestRotationNeverDeletesInVain(t *testing.T) {
	dir := tmpfsDir(t, "8m")
	k := &keepSet{keep: map[string]bool{}}
	r, vc, _ := dumpRecorder(t, rigConfig{
		Rec:  engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0)), CacheSize: 8 << 20, TopicBytes: 2 << 20},
		Dump: Config{Dir: dir, Policy: PolicySeparate, MaxFiles: 1, MinFreeDisk: 1 << 20, Keeper: k, FrameSize: 256 << 10}})
	ids := discover(t, r, "big")
	payload := make([]byte, 4096)
	dumpAt := func(i int) Result {
		base := t0 + int64(i)*2000*ms
		for ns := base; ns <= base+500*ms; ns += 4 * ms { // 126 x 4 KiB
			vc.Set(ns)
			r.Ingest(ids["big"], ns-1, payload)
		}
		id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("q", i), Pre: new(500 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(base + 600*ms)
		return wait(t, r, id)
	}
	var paths []string
	for i := range 2 {
		res := dumpAt(i)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		k.mu.Lock()
		k.keep[filepath.Base(res.Path)] = true
		k.mu.Unlock()
		paths = append(paths, res.Path)
	}
	f, _ := os.Create(filepath.Join(dir, "filler"))
	for b := make([]byte, 64<<10); ; {
		if _, err := f.Write(b); err != nil {
			break
		}
	}
	f.Close()
	res := dumpAt(2)
	if !errors.Is(res.Err, ErrDiskLow) || res.Path != "" {
		t.Fatalf("dump into a disk full of another file: %+v", res)
	}
	for _, want := range []string{"is full", "other files", "no dump deleted", "2 dumps rotation may delete"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, res.Err)
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("queued dump deleted in vain: %v", err)
		}
	}
	if st := r.Status(); st.Rotated != 0 || st.RefusedDisk != 1 || len(k.evicted) != 0 {
		t.Errorf("status: rotated %d, refused %d, evicted %v", st.Rotated, st.RefusedDisk, k.evicted)
	}
	// with room for it once the other file shrinks, the oldest queued dump
	// makes the rest of the room
	os.Truncate(filepath.Join(dir, "filler"), 0)
	if res := dumpAt(3); res.Err != nil {
		t.Fatalf("after the other file went: %v", res.Err)
	}
}
