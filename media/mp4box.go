package media

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// ISO-BMFF box header sizes.
const (
	boxHeader      = 8  // size u32, type
	boxLargeHeader = 16 // size = 1, type, largesize u64
	fullBoxHeader  = 4  // version u8, flags u24
)

// fourCC packs a box type.
func fourCC(s string) uint32 {
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}

func fourCCString(t uint32) string {
	b := [4]byte{byte(t >> 24), byte(t >> 16), byte(t >> 8), byte(t)}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b[:])
}

var (
	typeMoov = fourCC("moov")
	typeMoof = fourCC("moof")
	typeMvhd = fourCC("mvhd")
	typeTrak = fourCC("trak")
	typeTkhd = fourCC("tkhd")
	typeEdts = fourCC("edts")
	typeElst = fourCC("elst")
	typeMdia = fourCC("mdia")
	typeMdhd = fourCC("mdhd")
	typeHdlr = fourCC("hdlr")
	typeMinf = fourCC("minf")
	typeStbl = fourCC("stbl")
	typeStsd = fourCC("stsd")
	typeStts = fourCC("stts")
	typeCtts = fourCC("ctts")
	typeStss = fourCC("stss")
	typeStsc = fourCC("stsc")
	typeStsz = fourCC("stsz")
	typeStz2 = fourCC("stz2")
	typeStco = fourCC("stco")
	typeCo64 = fourCC("co64")
	typeMvex = fourCC("mvex")
	typeTrex = fourCC("trex")
	typeTraf = fourCC("traf")
	typeTfhd = fourCC("tfhd")
	typeTfdt = fourCC("tfdt")
	typeTrun = fourCC("trun")
	typeAvc1 = fourCC("avc1")
	typeAvc3 = fourCC("avc3")
	typeHvc1 = fourCC("hvc1")
	typeHev1 = fourCC("hev1")
	typeAvcC = fourCC("avcC")
	typeHvcC = fourCC("hvcC")
)

// box is one parsed box inside a buffer.
type box struct {
	typ  uint32
	off  int64  // file offset of the header
	hdr  int    // header length: 8 or 16
	data []byte // payload (after the header)
}

// boxIter walks the child boxes of a payload held in memory. A header that
// is too short, a size smaller than its header, a box running past its
// parent, or a size of 0 (allowed only at the top level) stops the walk
// with a *BoxError; fewer than 8 trailing bytes are padding and ignored.
// Every step moves forward by at least 8 bytes, so the walk is bounded by
// the payload's length.
type boxIter struct {
	file string
	path string // the parent's path
	b    []byte
	base int64 // file offset of b[0]
	pos  int
	err  error
}

func (it *boxIter) next() (box, bool) {
	if it.err != nil || len(it.b)-it.pos < boxHeader {
		return box{}, false
	}
	off := it.base + int64(it.pos)
	rest := it.b[it.pos:]
	size := uint64(binary.BigEndian.Uint32(rest))
	typ := binary.BigEndian.Uint32(rest[4:])
	hdr := uint64(boxHeader)
	switch size {
	case 0:
		it.err = boxErr(it.file, it.path+"/"+fourCCString(typ), off, ErrMalformed, "size 0 (to the end of the file) inside %s", it.path)
		return box{}, false
	case 1:
		if len(rest) < boxLargeHeader {
			it.err = boxErr(it.file, it.path+"/"+fourCCString(typ), off, ErrMalformed, "64-bit size runs past %s", it.path)
			return box{}, false
		}
		size, hdr = binary.BigEndian.Uint64(rest[8:]), boxLargeHeader
	}
	if size < hdr || size > uint64(len(rest)) {
		it.err = boxErr(it.file, it.path+"/"+fourCCString(typ), off, ErrMalformed,
			"size %d does not fit in %s (%d bytes left, header %d)", size, it.path, len(rest), hdr)
		return box{}, false
	}
	it.pos += int(size)
	return box{typ: typ, off: off, hdr: int(hdr), data: rest[hdr:size]}, true
}

func children(file, path string, b box) *boxIter {
	return &boxIter{file: file, path: path, b: b.data, base: b.off + int64(b.hdr)}
}

func boxErr(file, path string, off int64, err error, format string, args ...any) *BoxError {
	return &BoxError{File: file, Box: path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: err}
}

// topHeader reads the header of the top-level box at off in a file of
// size bytes: its type, header length and total size (a size of 0 means
// "to the end of the file"). A box the end of the file cuts is an error;
// see topHeaderCut.
func topHeader(r io.ReaderAt, file string, off, size int64, buf *[boxLargeHeader]byte) (typ uint32, hdr, total int64, err error) {
	typ, hdr, declared, err := topHeaderCut(r, file, off, size, buf)
	switch {
	case err != nil:
		return 0, 0, 0, err
	case hdr == 0:
		return 0, 0, 0, boxErr(file, "(top level)", off, ErrMalformed, "%d trailing bytes are not a box header", size-off)
	case hdr < 0:
		return 0, 0, 0, boxErr(file, fourCCString(typ), off, ErrMalformed, "64-bit size runs past the end of the file")
	case declared > uint64(size-off):
		return 0, 0, 0, boxErr(file, fourCCString(typ), off, ErrMalformed,
			"size %d does not fit in the file (%d bytes left, header %d)", declared, size-off, hdr)
	}
	return typ, hdr, int64(declared), nil
}

// topHeaderCut reads the header of the top-level box at off like
// topHeader, but a box that the end of the file cuts is not an error: its
// declared size may run past the end; hdr is 0 when fewer bytes than a
// box header are left (typ unknown) and -1 when its 64-bit size field is
// cut. A size smaller than its header is an error.
func topHeaderCut(r io.ReaderAt, file string, off, size int64, buf *[boxLargeHeader]byte) (typ uint32, hdr int64, declared uint64, err error) {
	n := int64(boxLargeHeader)
	if size-off < n {
		n = size - off
	}
	if n < boxHeader {
		return 0, 0, 0, nil
	}
	if _, err := readFullAt(r, buf[:n], off); err != nil {
		return 0, 0, 0, err
	}
	s := uint64(binary.BigEndian.Uint32(buf[:]))
	typ = binary.BigEndian.Uint32(buf[4:])
	hdr = boxHeader
	switch s {
	case 0:
		s = uint64(size - off)
	case 1:
		if n < boxLargeHeader {
			return typ, -1, 0, nil
		}
		s, hdr = binary.BigEndian.Uint64(buf[8:]), boxLargeHeader
	}
	if s < uint64(hdr) {
		return 0, 0, 0, boxErr(file, fourCCString(typ), off, ErrMalformed,
			"size %d does not fit in the file (%d bytes left, header %d)", s, size-off, hdr)
	}
	return typ, hdr, s, nil
}

// readFullAt reads len(b) bytes at off.
func readFullAt(r io.ReaderAt, b []byte, off int64) (int, error) {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return n, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// ticksToNs converts t ticks of a timescale to ns, rounding to nearest;
// ok is false when the result does not fit in an int64.
func ticksToNs(t int64, timescale uint32) (int64, bool) {
	neg := t < 0
	u := uint64(t)
	if neg {
		u = -u
	}
	hi, lo := bits.Mul64(u, uint64(nsPerSec))
	lo, c := bits.Add64(lo, uint64(timescale/2), 0)
	hi += c
	if hi >= uint64(timescale) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(timescale))
	if q > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(q), true
	}
	return int64(q), true
}

// nsToTicks converts ns to ticks of a timescale, rounding to nearest.
func nsToTicks(ns int64, timescale uint32) int64 {
	neg := ns < 0
	u := uint64(ns)
	if neg {
		u = -u
	}
	hi, lo := bits.Mul64(u, uint64(timescale))
	lo, c := bits.Add64(lo, uint64(nsPerSec/2), 0)
	hi += c
	q, _ := bits.Div64(hi, lo, uint64(nsPerSec)) // hi < 1e9 since timescale < 2^32
	if neg {
		return -int64(q)
	}
	return int64(q)
}

// addNs adds two times, ok false on overflow.
func addNs(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}
