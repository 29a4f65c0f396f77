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

// Extensions of dump files and of a dump being written.
const (
	PackExt = ".pack"
	MCAPExt = ".mcap"
	TmpExt  = ".tmp"
)

// Dir is a dump directory: the one place that knows how dumps are named
// (<UTC time>_<reason>_<seq><ext>), which files in it are dumps, which are
// leftovers of an interrupted dump (NAME<ext>.tmp), and how old dumps
// rotate out. The Dumper writes through it; "edr-lite ls" lists through it.
type Dir struct {
	Path string
	// Exts are the dump extensions counted as dumps (PackExt and MCAPExt
	// when empty). Rotation only ever deletes files with these.
	Exts []string
	// Mode is given to the directory when Prepare creates it (0: 0750);
	// Gid is its group then (< 0: the process's; OpenDir sets -1).
	Mode os.FileMode
	Gid  int
}

// OpenDir returns the Dir at path for dumps with the given extensions.
func OpenDir(path string, exts ...string) Dir { return Dir{Path: path, Exts: exts, Gid: -1} }

func (d Dir) exts() []string {
	if len(d.Exts) == 0 {
		return []string{PackExt, MCAPExt}
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
	// .tmp), by name; "edr-lite recover" salvages them.
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
		case strings.HasSuffix(n, TmpExt) && d.isDump(strings.TrimSuffix(n, TmpExt)):
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
// bound), never keep (the dump just written). It returns how many it
// deleted. RotateKeeping also spares the dumps a Keeper protects.
func (d Dir) Rotate(maxFiles int, maxBytes int64, keep string) (int, error) {
	n, _, err := d.RotateKeeping(maxFiles, maxBytes, keep, nil, false)
	return n, err
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
