package media

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"time"
)

// File-name timestamps (docs/media.md, "Time of a JPEG"). A name may carry
// a wall-clock time:
//
//	20261202T133222.052Z        ISO 8601 basic, with fraction and zone
//	2026-12-02T13:32:22.052+01:00  extended; '-' or ':' or nothing between fields
//	20261202_133222_052000      strftime %Y%m%d_%H%M%S_%f (fraction after '_': 6 or 9 digits)
//	20261202133222              no separators
//
// (date and time separated by 'T', '_', '-', ' ' or nothing; a fraction of
// 1 to 9 digits after '.' or ','; a zone 'Z', '+HH:MM', '+HHMM', '-HH:MM'
// or none, then Location applies), or a time since the UNIX epoch as a
// run of digits: 19 digits are nanoseconds (any value), 16 microseconds,
// 13 milliseconds and 10 seconds (these three only for times from
// 2001-09-09, the first 10-digit second, to 2100, so frame counters are
// not taken for times). The leftmost timestamp of either kind wins; a
// match must not touch other digits. docs/media.md, "Time of a JPEG".
var (
	nameDateTime = regexp.MustCompile(`(\d{4})-?(\d{2})-?(\d{2})[T_ -]?(\d{2})[:-]?(\d{2})[:-]?(\d{2})` +
		`(?:[.,](\d{1,9})|_(\d{9}|\d{6}))?(Z|[+-]\d{2}:?\d{2})?`)
	nameDigits = regexp.MustCompile(`\d+`)
)

// The plausible range of 10-, 13- and 16-digit epoch times, in seconds:
// [2001-09-09, 2100-01-01).
const (
	epochMin = 1_000_000_000
	epochMax = 4_102_444_800
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// NameTime returns the time a file name carries, in ns since the epoch,
// using loc (nil: UTC) for wall-clock times without a zone. The patterns
// are listed in docs/media.md; ok is false when the name carries none.
func NameTime(name string, loc *time.Location) (ns int64, ok bool) {
	if loc == nil {
		loc = time.UTC
	}
	best := -1
	for _, m := range nameDateTime.FindAllStringSubmatchIndex(name, -1) {
		if (m[0] > 0 && isDigit(name[m[0]-1])) || (m[1] < len(name) && isDigit(name[m[1]])) {
			continue
		}
		if t, ok := dateTimeFromMatch(name, m, loc); ok {
			ns, best = t, m[0]
			break
		}
	}
	for _, m := range nameDigits.FindAllStringIndex(name, -1) {
		if best >= 0 && m[0] >= best {
			break
		}
		if t, ok := epochDigits(name[m[0]:m[1]]); ok {
			return t, true
		}
	}
	return ns, best >= 0
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// fractionNs reads up to 9 fraction digits as nanoseconds ("052" = 52 ms);
// further digits are dropped.
func fractionNs(s string) int {
	ns, scale := 0, 100_000_000
	for i := 0; i < len(s) && scale > 0; i++ {
		ns += int(s[i]-'0') * scale
		scale /= 10
	}
	return ns
}

func dateTimeFromMatch(name string, m []int, loc *time.Location) (int64, bool) {
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return name[m[2*i]:m[2*i+1]]
	}
	frac := group(7)
	if frac == "" {
		frac = group(8)
	}
	if z := group(9); z != "" {
		off, ok := zoneOffset(z)
		if !ok {
			return 0, false
		}
		loc = time.FixedZone("", off)
	}
	return civilTime(atoi(group(1)), atoi(group(2)), atoi(group(3)), atoi(group(4)), atoi(group(5)), atoi(group(6)),
		fractionNs(frac), loc)
}

// zoneOffset parses "Z", "+HH:MM", "+HHMM", "-HH:MM" into seconds east of UTC.
func zoneOffset(z string) (int, bool) {
	if z == "Z" {
		return 0, true
	}
	if len(z) != 5 && len(z) != 6 {
		return 0, false
	}
	digits := z[1:]
	if len(z) == 6 {
		if z[3] != ':' {
			return 0, false
		}
		digits = z[1:3] + z[4:]
	}
	for i := 0; i < 4; i++ {
		if !isDigit(digits[i]) {
			return 0, false
		}
	}
	h, mi := atoi(digits[:2]), atoi(digits[2:])
	if h > 14 || mi > 59 {
		return 0, false
	}
	off := h*3600 + mi*60
	if z[0] == '-' {
		off = -off
	} else if z[0] != '+' {
		return 0, false
	}
	return off, true
}

// civilTime returns the instant of a wall-clock time in loc, refusing
// impossible fields (month 13, February 30, 24:00, leap seconds) and
// times outside int64 nanoseconds.
func civilTime(y, mo, d, h, mi, s, ns int, loc *time.Location) (int64, bool) {
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59 || y < 1678 || y > 2261 {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, ns, loc)
	if t.Day() != d || int(t.Month()) != mo || t.Hour() != h || t.Minute() != mi {
		return 0, false // February 30, or a local time skipped by a DST change
	}
	sec := t.Unix()
	if sec >= math.MaxInt64/nsPerSec || sec <= math.MinInt64/nsPerSec {
		return 0, false
	}
	return t.UnixNano(), true
}

// epochDigits reads a run of digits as an epoch time (see NameTime).
func epochDigits(s string) (int64, bool) {
	var unit int64
	switch len(s) {
	case 19:
		var v uint64
		for i := 0; i < len(s); i++ {
			v = v*10 + uint64(s[i]-'0')
		}
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case 16:
		unit = 1_000
	case 13:
		unit = 1_000_000
	case 10:
		unit = 1_000_000_000
	default:
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		v = v*10 + int64(s[i]-'0')
	}
	if sec := v / (nsPerSec / unit); sec < epochMin || sec >= epochMax {
		return 0, false
	}
	return v * unit, true
}

// JPEG markers and EXIF tags read by EXIFTime.
const (
	markerSOI  = 0xD8
	markerEOI  = 0xD9
	markerSOS  = 0xDA
	markerAPP1 = 0xE1

	tagExifIFD            = 0x8769
	tagDateTimeOriginal   = 0x9003
	tagOffsetTimeOriginal = 0x9011
	tagSubSecTimeOriginal = 0x9291

	tiffASCII = 2
	tiffLONG  = 4
	ifdEntry  = 12
)

// EXIFTime returns the time an EXIF block in a JPEG's APP1 segment says
// the picture was taken: DateTimeOriginal, refined by SubSecTimeOriginal
// and placed in time by OffsetTimeOriginal when present (else loc; nil:
// UTC). It reads only the bytes it needs, every offset bounds-checked;
// jpeg may be just the head of the file (the segments before the image
// data). The error wraps ErrNotJPEG (no SOI marker) or ErrNoTime.
func EXIFTime(jpeg []byte, loc *time.Location) (int64, error) {
	if len(jpeg) < 2 || jpeg[0] != 0xFF || jpeg[1] != markerSOI {
		return 0, fmt.Errorf("%w: no SOI marker", ErrNotJPEG)
	}
	if loc == nil {
		loc = time.UTC
	}
	sawExif := false
	for pos := 2; pos < len(jpeg); {
		if jpeg[pos] != 0xFF {
			return 0, fmt.Errorf("%w: no marker at offset %d before the EXIF block", ErrNoTime, pos)
		}
		for pos < len(jpeg) && jpeg[pos] == 0xFF { // fill bytes
			pos++
		}
		if pos >= len(jpeg) {
			break
		}
		m := jpeg[pos]
		pos++
		switch {
		case m == markerSOS || m == markerEOI:
			pos = len(jpeg)
			continue
		case m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			continue
		}
		if pos+2 > len(jpeg) {
			break
		}
		n := int(binary.BigEndian.Uint16(jpeg[pos:]))
		if n < 2 || pos+n > len(jpeg) {
			return 0, fmt.Errorf("%w: JPEG segment 0x%02X at offset %d runs past the data", ErrNoTime, m, pos-2)
		}
		seg := jpeg[pos+2 : pos+n]
		pos += n
		if m == markerAPP1 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			sawExif = true
			if t, err := tiffTime(seg[6:], loc); err == nil {
				return t, nil
			} else if err != errNoDateTime {
				return 0, err
			}
		}
	}
	if sawExif {
		return 0, fmt.Errorf("%w: EXIF has no DateTimeOriginal", ErrNoTime)
	}
	return 0, fmt.Errorf("%w: no EXIF block", ErrNoTime)
}

var errNoDateTime = fmt.Errorf("%w: EXIF has no DateTimeOriginal", ErrNoTime)

// tiffTime reads the TIFF structure of an EXIF block: IFD0's pointer to
// the Exif IFD, and there the three *Original tags. Only these two IFDs
// are read (no chains), so hostile offsets cannot make it loop.
func tiffTime(tiff []byte, loc *time.Location) (int64, error) {
	if len(tiff) < 8 {
		return 0, fmt.Errorf("%w: EXIF TIFF header truncated", ErrNoTime)
	}
	var bo binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0, fmt.Errorf("%w: EXIF byte order %q", ErrNoTime, tiff[:2])
	}
	if bo.Uint16(tiff[2:]) != 42 {
		return 0, fmt.Errorf("%w: EXIF TIFF magic is not 42", ErrNoTime)
	}
	exifOff, ok := ifdLong(tiff, bo, bo.Uint32(tiff[4:]), tagExifIFD)
	if !ok {
		return 0, errNoDateTime
	}
	dt, ok := ifdASCII(tiff, bo, exifOff, tagDateTimeOriginal)
	if !ok {
		return 0, errNoDateTime
	}
	// "YYYY:MM:DD HH:MM:SS"
	if len(dt) < 19 || dt[4] != ':' || dt[7] != ':' || dt[10] != ' ' || dt[13] != ':' || dt[16] != ':' {
		return 0, fmt.Errorf("%w: EXIF DateTimeOriginal %q is not YYYY:MM:DD HH:MM:SS", ErrNoTime, dt)
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if !isDigit(dt[i]) {
			return 0, fmt.Errorf("%w: EXIF DateTimeOriginal %q is not YYYY:MM:DD HH:MM:SS", ErrNoTime, dt)
		}
	}
	frac := 0
	if ss, ok := ifdASCII(tiff, bo, exifOff, tagSubSecTimeOriginal); ok {
		n := 0
		for n < len(ss) && isDigit(ss[n]) {
			n++
		}
		frac = fractionNs(ss[:n])
	}
	if z, ok := ifdASCII(tiff, bo, exifOff, tagOffsetTimeOriginal); ok && len(z) >= 6 {
		if off, ok := zoneOffset(z[:6]); ok {
			loc = time.FixedZone("", off)
		}
	}
	t, ok := civilTime(atoi(dt[0:4]), atoi(dt[5:7]), atoi(dt[8:10]), atoi(dt[11:13]), atoi(dt[14:16]), atoi(dt[17:19]), frac, loc)
	if !ok {
		return 0, fmt.Errorf("%w: EXIF DateTimeOriginal %q is not a valid time", ErrNoTime, dt)
	}
	return t, nil
}

// ifdFind returns the 12-byte entry of tag in the IFD at off.
func ifdFind(tiff []byte, bo binary.ByteOrder, off uint32, tag uint16) ([]byte, bool) {
	if uint64(off)+2 > uint64(len(tiff)) {
		return nil, false
	}
	n := int(bo.Uint16(tiff[off:]))
	start := int(off) + 2
	if start+n*ifdEntry > len(tiff) {
		n = (len(tiff) - start) / ifdEntry // read the entries that are there
	}
	for i := 0; i < n; i++ {
		e := tiff[start+i*ifdEntry : start+(i+1)*ifdEntry]
		if bo.Uint16(e) == tag {
			return e, true
		}
	}
	return nil, false
}

func ifdLong(tiff []byte, bo binary.ByteOrder, off uint32, tag uint16) (uint32, bool) {
	e, ok := ifdFind(tiff, bo, off, tag)
	if !ok || bo.Uint16(e[2:]) != tiffLONG || bo.Uint32(e[4:]) != 1 {
		return 0, false
	}
	return bo.Uint32(e[8:]), true
}

// ifdASCII returns an ASCII value without its trailing NULs and spaces.
func ifdASCII(tiff []byte, bo binary.ByteOrder, off uint32, tag uint16) (string, bool) {
	e, ok := ifdFind(tiff, bo, off, tag)
	if !ok || bo.Uint16(e[2:]) != tiffASCII {
		return "", false
	}
	n := bo.Uint32(e[4:])
	var v []byte
	if n <= 4 {
		v = e[8 : 8+n]
	} else {
		p := bo.Uint32(e[8:])
		if uint64(p)+uint64(n) > uint64(len(tiff)) {
			return "", false
		}
		v = tiff[p : p+n]
	}
	for len(v) > 0 && (v[len(v)-1] == 0 || v[len(v)-1] == ' ') {
		v = v[:len(v)-1]
	}
	return string(v), true
}
