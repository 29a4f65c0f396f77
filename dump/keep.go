package dump

import (
	"errors"
	"math"
	"os"
)

// Keeper protects dumps from rotation: an upload queue keeps the dumps the
// server has not confirmed yet.
type Keeper interface {
	// Keep reports whether the dump at path must not be rotated out.
	Keep(path string) bool
	// Evicted is told that rotation deleted a dump Keep protected, because
	// the disk was critically low; why says so.
	Evicted(path, why string)
}

// EvictReason is the why a Keeper hears when rotation deletes a kept dump.
const EvictReason = "disk critically low (free space below min_free_disk): rotation deleted it to keep recording"

// RotateKeeping is Rotate that skips the dumps k keeps (k nil: none): the
// bounds may then be exceeded, held is how many kept dumps stand beyond
// them. When critical (the disk's free space is below MinFreeDisk) kept
// dumps are deleted too, oldest first, only as far as the bounds require,
// and k.Evicted hears of each.
func (d Dir) RotateKeeping(maxFiles int, maxBytes int64, keep string, k Keeper, critical bool) (deleted, held int, err error) {
	if maxFiles == 0 && maxBytes == 0 {
		return 0, 0, nil
	}
	l, err := d.List()
	if err != nil {
		return 0, 0, err
	}
	var total int64
	for _, f := range l.Dumps {
		total += f.Size
	}
	if maxFiles == 0 {
		maxFiles = math.MaxInt
	}
	if maxBytes == 0 {
		maxBytes = math.MaxInt64
	}
	count := len(l.Dumps)
	over := func() bool { return count > maxFiles || total > maxBytes }
	var errs []error
	remove := func(f File) bool {
		if err := os.Remove(f.Path); err != nil {
			errs = append(errs, err)
			return false
		}
		count--
		total -= f.Size
		deleted++
		return true
	}
	var kept []File
	for _, f := range l.Dumps {
		if !over() {
			break
		}
		if f.Path == keep {
			continue
		}
		if k != nil && k.Keep(f.Path) {
			kept = append(kept, f)
			continue
		}
		remove(f)
	}
	for _, f := range kept {
		if !over() {
			break
		}
		if !critical {
			held++ // stands beyond the bounds: count it as gone to find how many
			count--
			total -= f.Size
			continue
		}
		if remove(f) {
			k.Evicted(f.Path, EvictReason)
		}
	}
	return deleted, held, errors.Join(errs...)
}
