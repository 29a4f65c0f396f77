// Reading past damage (ReaderOptions.SkipDamaged).

package pack

import (
	"errors"
	"fmt"
	"io"
)

// maxSkippedRegions bounds the regions Skipped lists one by one (it
// counts every one).
const maxSkippedRegions = 100

// Skipped is what a Reader reading with SkipDamaged passed over.
type Skipped struct {
	Regions int   // damaged regions skipped
	Frames  int   // frames lost in them (exact when the file's index is intact; see LostRange)
	Bytes   int64 // bytes skipped
	// Types counts type sections left out: damaged (their CRC holds but
	// their content does not decode) or referring to a type whose body was
	// in a damaged one. Their topics read as untyped from there.
	Types int
	// Lost lists the first regions (at most 100), in the order met.
	Lost []LostRange
}

// Any reports whether anything was skipped.
func (s *Skipped) Any() bool { return s.Regions > 0 || s.Types > 0 }

// String says it in one line: "2 damaged regions (1 frame, 4096 bytes),
// first at offset 64: frame data CRC32C ...; 1 type section".
func (s *Skipped) String() string {
	var out string
	if s.Regions > 0 {
		out = fmt.Sprintf("%d damaged region(s) (%d frame(s), %d bytes)", s.Regions, s.Frames, s.Bytes)
		if len(s.Lost) > 0 {
			out += fmt.Sprintf(", the first at offset %d: %s", s.Lost[0].Offset, s.Lost[0].Reason)
		}
	}
	if s.Types > 0 {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("%d type section(s) (their topics read as raw bytes from there)", s.Types)
	}
	return out
}

// SetSkipDamaged turns reading past damage on or off (ReaderOptions.
// SkipDamaged); a read that returned a damaged frame's error then goes on
// past it.
func (r *Reader) SetSkipDamaged(on bool) { r.skipDamaged = on }

// Skipped returns what the reads so far passed over (ReaderOptions.SkipDamaged).
func (r *Reader) Skipped() Skipped {
	s := r.skipped
	s.Lost = append([]LostRange(nil), s.Lost...)
	return s
}

// skipDamage moves the reader from the damaged record at r.pos to the next
// intact one, as Recover resynchronises, and counts what it passed over.
// err is the damage the read met there.
func (r *Reader) skipDamage(err error) bool {
	if !r.skipDamaged || err == io.EOF || r.pos >= r.end { // first: errors.As allocates
		return false
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || errors.Is(err, ErrShrunk) {
		return false
	}
	pos := r.pos
	for pos < r.end { // intact sections before the damage (read-ahead leaves the position there)
		b := r.data[pos:r.end]
		if len(b) < 4 || le.Uint32(b) != sectionMagic {
			break
		}
		_, _, rec, _, err := parseSection(b)
		if err != nil {
			break
		}
		pos += rec
	}
	if pos >= r.end {
		r.pos = pos
		return true
	}
	next, frames, from, to := r.resync(pos)
	r.skipped.add(LostRange{Offset: pos, Length: next - pos, Frames: frames, FromNs: from, ToNs: to, Reason: ce.Reason})
	r.pos = next
	return true
}

// resync returns the offset of the next intact record after the damaged
// one at pos, and the frames and times the region held (walker.resync, and
// the index when the file has one).
func (r *Reader) resync(pos int64) (next int64, frames int, from, to int64) {
	if r.walk == nil {
		r.walk = newWalker(r.path, r.data, ReaderOptions{MaxMemory: r.maxMem})
	}
	// A frame whose head checks out has a length to trust.
	var skip int64
	var h frameHeader
	if _, err := parseFrameHeader(r.data[pos:r.end], &h); err == nil && headCRCOf(r.data[pos:pos+h.recLen], &h) == h.headCRC {
		skip = h.recLen
	}
	next, frames, from = r.walk.resync(pos, r.end, skip)
	if next < r.end {
		if _, err := parseFrameHeader(r.data[next:r.end], &h); err == nil {
			to = h.timeNs
		}
	}
	if r.indexed {
		frames, from, to = r.idx.lostIn(pos, next, from, to)
	}
	return next, frames, from, to
}

func (s *Skipped) add(l LostRange) {
	s.Regions++
	s.Frames += l.Frames
	s.Bytes += l.Length
	if len(s.Lost) < maxSkippedRegions {
		s.Lost = append(s.Lost, l)
	}
}
