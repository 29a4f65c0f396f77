package dump

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Extensions of dump files, of a dump being written, and of one a crash
// interrupted (a NAME.tmp a restarted recorder found: NAME.interrupted).
const (
	PackExt        = ".pack"
	MCAPExt        = ".mcap"
	TmpExt         = ".tmp"
	InterruptedExt = ".interrupted"
)

// Dir is a dump directory: the one place that knows how dumps are named
// (<UTC time>_<reason>_<seq><ext>), which files in it are dumps, which are
// leftovers of an interrupted dump (NAME<ext>.tmp), and how old dumps
// rotate out. The Dumper writes through it; "edr-lite ls" lists through it.
type Dir struct {
	Path string
	// Exts are the dump extensions counted as dumps (PackExt and MCAPExt,
	// and both encrypted, +".age", when empty). Rotation only ever deletes
	// files with these.
	Exts []string
	// Mode is given to the directory when Prepare creates it (0: 0750);
	// Gid is its group then (< 0: the process's; OpenDir sets -1).
	Mode os.FileMode
	Gid  int
	// Removing, when set, is told of each dump rotation is about to
	// delete, and why (the bound it serves), before it deletes it: a
	// chain records it in its ledger, so a rotated dump is told from a
	// deleted one.
	Removing func(path, reason string)
}

// OpenDir returns the Dir at path for dumps with the given extensions.
func OpenDir(path string, exts ...string) Dir { return Dir{Path: path, Exts: exts, Gid: -1} }

func (d Dir) exts() []string {
	if len(d.Exts) == 0 { // and the same encrypted at rest (crypt.Ext)
		return []string{PackExt, MCAPExt, PackExt + ".age", MCAPExt + ".age"}
	}
	return d.Exts
}

// Prepare creates the directory if missing (with Mode, 0750 when 0, and
// group Gid when >= 0) and proves it writable.
func (d Dir) Prepare() error {
	if _, err := os.Stat(d.Path); os.IsNotExist(err) {
		mode := d.Mode
		if mode == 0 {
			mode = dirMode(DefaultFileMode)
		}
		if err := os.MkdirAll(d.Path, mode); err != nil {
			return configErr("Dir", "%v", err)
		}
		if err := os.Chmod(d.Path, mode); err != nil { // the umask may have cleared bits
			return configErr("Dir", "%v", err)
		}
		if d.Gid >= 0 {
			if err := os.Chown(d.Path, -1, d.Gid); err != nil {
				return configErr("Dir", "group: %v", err)
			}
		}
	}
	f, err := os.CreateTemp(d.Path, ".edr-probe-*")
	if err != nil {
		return configErr("Dir", "not writable: %v", err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return configErr("Dir", "cannot remove probe file: %v", err)
	}
	return nil
}

// Name is the file name of dump seq, triggered at t0 for reason:
// "<UTC>_<reason>_<seq><ext>", the reason reduced to [A-Za-z0-9.-] and 64
// bytes. Names sort by trigger time.
func Name(t0 int64, reason string, seq uint64, ext string) string {
	ts := time.Unix(0, t0).UTC().Format("20060102T150405.000000000Z")
	clean := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
			return c
		}
		return '-'
	}, reason)
	if len(clean) > 64 {
		clean = clean[:64]
	}
	return fmt.Sprintf("%s_%s_%d%s", ts, clean, seq, ext)
}

// Listing is what a dump directory holds.
type Listing struct {
	// Dumps are the complete dumps, oldest first (by name), with sizes.
	Dumps []File
	// Leftovers are dumps interrupted by a crash or power loss (their
	// .tmp, or .interrupted once a restarted recorder found it), by name;
	// "edr-lite recover" salvages them.
	Leftovers []File
}

// File is one file of a Listing.
type File struct {
	Name string // base name
	Path string // Dir.Path joined with Name
	Size int64
}

// List reads the directory.
func (d Dir) List() (Listing, error) {
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return Listing{}, fmt.Errorf("dump: listing %s: %w", d.Path, err)
	}
	var l Listing
	for _, de := range ents {
		n := de.Name()
		if de.IsDir() {
			continue
		}
		var dst *[]File
		switch {
		case strings.HasSuffix(n, TmpExt) && d.isDump(strings.TrimSuffix(n, TmpExt)),
			strings.HasSuffix(n, InterruptedExt) && d.isDump(strings.TrimSuffix(n, InterruptedExt)):
			dst = &l.Leftovers
		case d.isDump(n):
			dst = &l.Dumps
		default:
			continue
		}
		f := File{Name: n, Path: filepath.Join(d.Path, n)}
		if info, err := de.Info(); err == nil {
			f.Size = info.Size()
		}
		*dst = append(*dst, f)
	}
	byName := func(fs []File) { sort.Slice(fs, func(i, k int) bool { return fs[i].Name < fs[k].Name }) }
	byName(l.Dumps)
	byName(l.Leftovers)
	return l, nil
}

func (d Dir) isDump(name string) bool {
	for _, e := range d.exts() {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// Rotate deletes the oldest dumps beyond maxFiles / maxBytes (0 = no
// bound), one at a time, never keep (the dump just written). It returns
// how many it deleted. RotateKeeping also spares the dumps a Keeper
// protects; MakeRoom deletes for free space.
func (d Dir) Rotate(maxFiles int, maxBytes int64, keep string) (int, error) {
	del, _, err := d.RotateKeeping(maxFiles, maxBytes, keep, nil)
	return len(del), err
}

// LeftoverName is the name a leftover goes by: the dump's name without
// TmpExt or InterruptedExt.
func LeftoverName(path string) string {
	return strings.TrimSuffix(strings.TrimSuffix(path, TmpExt), InterruptedExt)
}

// Leftovers is what TidyLeftovers did.
type Leftovers struct {
	// Removed are the empty leftovers it deleted (nothing to salvage: a
	// crash right after the file was created).
	Removed []string
	// Kept are the others, renamed NAME.interrupted (or left where a
	// rename failed), for "edr-lite recover".
	Kept []string
	// Errs are what failed (the file is then left as it was).
	Errs []error
}

// TidyLeftovers deals with the leftovers of an earlier run, which only the
// recorder that owns the directory may do (no dump of its own is being
// written yet): an empty one holds nothing and is removed; any other is
// renamed from NAME.tmp to NAME.interrupted, a name that says why it is
// there and that no writer will reuse.
func (d Dir) TidyLeftovers() (Leftovers, error) {
	l, err := d.List()
	if err != nil {
		return Leftovers{}, err
	}
	var out Leftovers
	for _, f := range l.Leftovers {
		if f.Size == 0 {
			if err := os.Remove(f.Path); err != nil {
				out.Errs = append(out.Errs, err)
				out.Kept = append(out.Kept, f.Path)
				continue
			}
			out.Removed = append(out.Removed, f.Path)
			continue
		}
		kept := f.Path
		if strings.HasSuffix(kept, TmpExt) {
			to := LeftoverName(kept) + InterruptedExt
			if _, err := os.Lstat(to); err == nil {
				out.Errs = append(out.Errs, fmt.Errorf("dump: %s not renamed: %s exists", kept, to))
			} else if err := os.Rename(kept, to); err != nil {
				out.Errs = append(out.Errs, err)
			} else {
				kept = to
			}
		}
		out.Kept = append(out.Kept, kept)
	}
	if len(out.Removed) > 0 || len(out.Kept) > 0 {
		if err := syncDir(d.Path); err != nil {
			out.Errs = append(out.Errs, err)
		}
	}
	return out, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
