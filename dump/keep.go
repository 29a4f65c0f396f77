package dump

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/edr-lite/edr-lite/internal/units"
)

// Keeper protects dumps from rotation: an upload queue keeps the dumps the
// server has not confirmed yet.
type Keeper interface {
	// Keep reports whether the dump at path must not be rotated out.
	Keep(path string) bool
	// Evicted is told that rotation deleted a dump Keep protected: a new
	// dump needed its room (MakeRoom, Config.MinFreeDisk). e says which
	// and why.
	Evicted(e Eviction)
}

// Reasons a dump is rotated out: the bound its deletion served.
const (
	ReasonMaxFiles      = "max_files"
	ReasonMaxTotalBytes = "max_total_bytes"
	ReasonMinFreeDisk   = "min_free_disk"
)

// Eviction is one dump rotation deleted.
type Eviction struct {
	Path   string
	Size   int64  // its size
	Reason string // ReasonMaxFiles, ReasonMaxTotalBytes or ReasonMinFreeDisk
	Kept   bool   // a Keeper protected it (a dump not yet uploaded)
	Why    string // the same for people
}

// EvictReason is the why a Keeper hears when rotation deletes a kept dump
// to make room for a new one.
const EvictReason = "min_free_disk: a new dump needed its room on the disk (recording wins over uploading): rotation deleted it"

// RotateKeeping deletes the oldest dumps, one at a time, while the
// directory holds more than maxFiles dumps or more than maxBytes (0 = no
// bound), never keep (the dump just written) nor a dump k keeps (k nil:
// none). The bounds may then stay exceeded: held is how many kept dumps
// stand beyond them. It returns the dumps it deleted, each with the bound
// it served.
func (d Dir) RotateKeeping(maxFiles int, maxBytes int64, keep string, k Keeper) (deleted []Eviction, held int, err error) {
	if maxFiles == 0 && maxBytes == 0 {
		return nil, 0, nil
	}
	l, err := d.List()
	if err != nil {
		return nil, 0, err
	}
	return rotation(l.Dumps, maxFiles, maxBytes, keep, k, func(f File, reason string) error {
		if d.Removing != nil {
			d.Removing(f.Path, reason)
		}
		return os.Remove(f.Path)
	})
}

// RotationAfter is what RotateKeeping(maxFiles, maxBytes, next.Path, k)
// would delete once next is in the directory (a dump about to be renamed
// into place), each deletion assumed to succeed. It deletes nothing.
func (d Dir) RotationAfter(next File, maxFiles int, maxBytes int64, k Keeper) ([]Eviction, error) {
	if maxFiles == 0 && maxBytes == 0 {
		return nil, nil
	}
	l, err := d.List()
	if err != nil {
		return nil, err
	}
	dumps := l.Dumps
	i := sort.Search(len(dumps), func(i int) bool { return dumps[i].Name >= next.Name })
	if i == len(dumps) || dumps[i].Name != next.Name {
		dumps = slices.Insert(dumps, i, next)
	}
	del, _, _ := rotation(dumps, maxFiles, maxBytes, next.Path, k, func(File, string) error { return nil })
	return del, nil
}

// rotation deletes (remove) the oldest of dumps (sorted by name) while
// they are more than maxFiles or hold more than maxBytes: RotateKeeping's
// rule.
func rotation(dumps []File, maxFiles int, maxBytes int64, keep string, k Keeper, remove func(f File, reason string) error) (deleted []Eviction, held int, err error) {
	var total int64
	for _, f := range dumps {
		total += f.Size
	}
	if maxFiles == 0 {
		maxFiles = math.MaxInt
	}
	if maxBytes == 0 {
		maxBytes = math.MaxInt64
	}
	count := len(dumps)
	var errs []error
	for _, f := range dumps {
		reason := ""
		switch {
		case count > maxFiles:
			reason = ReasonMaxFiles
		case total > maxBytes:
			reason = ReasonMaxTotalBytes
		default:
			return deleted, held, errors.Join(errs...)
		}
		if f.Path == keep {
			continue
		}
		if k != nil && k.Keep(f.Path) {
			held++ // stands beyond the bounds: count it as gone to find how many
			count--
			total -= f.Size
			continue
		}
		if err := remove(f, reason); err != nil {
			errs = append(errs, err)
			continue
		}
		count--
		total -= f.Size
		deleted = append(deleted, Eviction{Path: f.Path, Size: f.Size, Reason: reason,
			Why: fmt.Sprintf("%s: the directory holds more dumps than the bound", reason)})
	}
	return deleted, held, errors.Join(errs...)
}

// RoomError says why MakeRoom deleted nothing: the dumps it may delete
// could not free what is missing. It wraps ErrDiskLow.
type RoomError struct {
	Dir       string
	Free      int64 // bytes free on the file system
	Size      int64 // the file system's size
	Need      int64 // bytes that must be free
	Deletable int64 // what deleting every dump it may delete would free
	Dumps     int   // how many dumps those are
	DumpBytes int64 // what every dump of the directory holds
}

func (e *RoomError) Error() string {
	return fmt.Sprintf("the file system of %s is full: %s free of %s, %s needed; deleting all %d dumps rotation may delete would free only %s (the directory's dumps hold %s, other files the remaining %s): no dump deleted",
		e.Dir, units.FormatSize(e.Free), units.FormatSize(e.Size), units.FormatSize(e.Need), e.Dumps,
		units.FormatSize(e.Deletable), units.FormatSize(e.DumpBytes), units.FormatSize(max(e.Size-e.Free-e.DumpBytes, 0)))
}

// Unwrap makes a RoomError match ErrDiskLow.
func (e *RoomError) Unwrap() error { return ErrDiskLow }

// MakeRoom deletes dumps until the file system holding the directory has
// need bytes free (free is what it has now): one at a time, the oldest
// dumps k does not keep first, then the oldest it keeps (k hears of each,
// Keeper.Evicted), never keep. It deletes only when that makes the room:
// when deleting every dump it may delete would not free enough (the disk
// is full of other files), it deletes nothing and returns a *RoomError
// saying what holds the disk.
func (d Dir) MakeRoom(free, need int64, keep string, k Keeper) ([]Eviction, error) {
	if free >= need {
		return nil, nil
	}
	l, err := d.List()
	if err != nil {
		return nil, err
	}
	type cand struct {
		f     File
		alloc int64 // what deleting it frees
		kept  bool
	}
	var loose, kept []cand
	var deletable, dumpBytes int64
	for _, f := range l.Dumps {
		c := cand{f: f, alloc: allocated(f.Path, f.Size)}
		dumpBytes += c.alloc
		if f.Path == keep {
			continue
		}
		if k != nil && k.Keep(f.Path) {
			c.kept = true
			kept = append(kept, c)
		} else {
			loose = append(loose, c)
		}
		deletable += c.alloc
	}
	if free+deletable < need {
		size, _ := diskSize(d.Path)
		return nil, &RoomError{Dir: d.Path, Free: free, Size: size, Need: need, Deletable: deletable,
			Dumps: len(loose) + len(kept), DumpBytes: dumpBytes}
	}
	var out []Eviction
	var errs []error
	for _, c := range append(loose, kept...) {
		if free >= need {
			break
		}
		if d.Removing != nil {
			d.Removing(c.f.Path, ReasonMinFreeDisk)
		}
		if err := os.Remove(c.f.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		free += c.alloc
		e := Eviction{Path: c.f.Path, Size: c.f.Size, Reason: ReasonMinFreeDisk, Kept: c.kept,
			Why: "min_free_disk: a new dump needed its room on the disk: rotation deleted it"}
		if c.kept {
			e.Why = EvictReason
			k.Evicted(e)
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}
