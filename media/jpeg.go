package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimeSource says where a JPEG frame's time comes from.
type TimeSource uint8

const (
	// TimeFromName: a timestamp in the file name (NameTime).
	TimeFromName TimeSource = iota + 1
	// TimeFromEXIF: EXIF DateTimeOriginal + SubSecTimeOriginal (+ OffsetTimeOriginal) (EXIFTime).
	TimeFromEXIF
	// TimeFromRate: JPEGOptions.StartNs + i*FrameIntervalNs, i the file's
	// position among the directory's JPEGs in name order.
	TimeFromRate
)

func (s TimeSource) String() string {
	switch s {
	case TimeFromName:
		return "name"
	case TimeFromEXIF:
		return "exif"
	case TimeFromRate:
		return "rate"
	}
	return "TimeSource(" + strconv.Itoa(int(s)) + ")"
}

// ParseTimeSource parses "name", "exif" or "rate".
func ParseTimeSource(s string) (TimeSource, error) {
	for _, t := range []TimeSource{TimeFromName, TimeFromEXIF, TimeFromRate} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("media: unknown time source %q (want name, exif or rate)", s)
}

// JPEGOptions configure OpenJPEGDir. The zero value reads times from file
// names, then from EXIF, in UTC.
type JPEGOptions struct {
	// Sources are tried in order for each file; the first that gives a
	// time wins. Default {TimeFromName, TimeFromEXIF}.
	Sources []TimeSource
	// StartNs and FrameIntervalNs (> 0) define TimeFromRate.
	StartNs         int64
	FrameIntervalNs int64
	// Location of wall-clock times that carry no zone (in names, and EXIF
	// without OffsetTimeOriginal). Default UTC.
	Location *time.Location
	// MaxFileBytes: larger files are skipped. Default DefaultMaxJPEGBytes.
	MaxFileBytes int64
}

// DefaultMaxJPEGBytes is JPEGOptions.MaxFileBytes when it is 0.
const DefaultMaxJPEGBytes = 256 << 20

// jpegStart is the buffer OpenJPEGDir starts with; it grows to the
// largest file it reads (each file is read whole, up to MaxFileBytes).
const jpegStart = 64 << 10

// JPEGFrame is one image of a JPEG folder.
type JPEGFrame struct {
	Name          string     // file name inside the directory
	TimeNs        int64      // ns since the epoch
	Source        TimeSource // which source gave TimeNs
	Size          int64      // bytes, when the directory was opened
	Width, Height int        // from the JPEG header
	// Cut is why the file is not a whole image ("" when it is): it holds
	// image data but the end of the file cuts it (CheckJPEG). The frame
	// is kept with its bytes as stored: a viewer shows the part it holds.
	Cut string
}

// Skip is a directory entry OpenJPEGDir left out, and why.
type Skip struct {
	Name   string
	Reason string
	// Damaged: the file is a JPEG cut short (or broken) before its image
	// data (CheckJPEG).
	Damaged bool
}

// JPEGDir is a directory of JPEG files seen as a stream of frames, sorted
// by time (ties by name). It is safe for concurrent use: it holds only the
// listing, and ReadFrame opens the file it reads.
type JPEGDir struct {
	dir     string
	max     int64
	frames  []JPEGFrame
	skipped []Skip
}

// OpenJPEGDir lists dir, checks that each .jpg / .jpeg file (any case)
// starts with an SOI marker, that image/jpeg accepts its header and that
// it holds image data (CheckJPEG), and gives each a time from
// opts.Sources. Entries that are not such files, are not JPEGs, hold no
// image data (cut short before it: Skip.Damaged) or get no time are
// listed by Skipped with the reason; they are never an error. A JPEG cut
// inside its image data is a frame with the reason in JPEGFrame.Cut. It
// reads each file whole (not decoding the image). The error is about dir
// itself or the options.
func OpenJPEGDir(dir string, opts JPEGOptions) (*JPEGDir, error) {
	sources := opts.Sources
	if len(sources) == 0 {
		sources = []TimeSource{TimeFromName, TimeFromEXIF}
	}
	for _, s := range sources {
		if s < TimeFromName || s > TimeFromRate {
			return nil, fmt.Errorf("media: unknown time source %d", s)
		}
		if s == TimeFromRate && opts.FrameIntervalNs <= 0 {
			return nil, errors.New("media: the rate time source needs FrameIntervalNs > 0")
		}
	}
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	d := &JPEGDir{dir: dir, max: opts.MaxFileBytes}
	if d.max <= 0 {
		d.max = DefaultMaxJPEGBytes
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.SortFunc(names, naturalCompare)
	buf := make([]byte, 0, jpegStart)
	index := 0 // position among the JPEGs, for TimeFromRate
	for _, name := range names {
		ext := strings.ToLower(filepath.Ext(name))
		if ext != ".jpg" && ext != ".jpeg" {
			d.skip(name, "not a .jpg or .jpeg file")
			continue
		}
		var f JPEGFrame
		f.Name = name
		buf, err = d.readFile(name, buf, &f)
		if err != nil {
			d.skipped = append(d.skipped, Skip{Name: name, Reason: err.Error(),
				Damaged: errors.Is(err, ErrCutJPEG) || errors.Is(err, ErrDamagedJPEG)})
			continue
		}
		i := index
		index++
		var reasons []string
		for _, s := range sources {
			switch s {
			case TimeFromName:
				if t, ok := NameTime(name, loc); ok {
					f.TimeNs, f.Source = t, s
				} else {
					reasons = append(reasons, "no timestamp in the name")
				}
			case TimeFromEXIF:
				if t, err := EXIFTime(buf, loc); err == nil {
					f.TimeNs, f.Source = t, s
				} else {
					reasons = append(reasons, strings.TrimPrefix(err.Error(), ErrNoTime.Error()+": "))
				}
			case TimeFromRate:
				f.TimeNs, f.Source = opts.StartNs+int64(i)*opts.FrameIntervalNs, s
			}
			if f.Source != 0 {
				break
			}
		}
		if f.Source == 0 {
			d.skip(name, ErrNoTime.Error()+": "+strings.Join(reasons, "; "))
			continue
		}
		d.frames = append(d.frames, f)
	}
	slices.SortStableFunc(d.frames, func(a, b JPEGFrame) int {
		if a.TimeNs != b.TimeNs {
			if a.TimeNs < b.TimeNs {
				return -1
			}
			return 1
		}
		return naturalCompare(a.Name, b.Name)
	})
	return d, nil
}

func (d *JPEGDir) skip(name, reason string) {
	d.skipped = append(d.skipped, Skip{Name: name, Reason: reason})
}

// readFile reads a file into buf and checks that it is a JPEG (SOI,
// image/jpeg accepts its header) that holds image data (CheckJPEG); a
// JPEG cut inside its image data is kept, with the reason in f.Cut.
func (d *JPEGDir) readFile(name string, buf []byte, f *JPEGFrame) ([]byte, error) {
	fh, err := os.Open(filepath.Join(d.dir, name))
	if err != nil {
		return buf, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return buf, err
	}
	if !st.Mode().IsRegular() {
		return buf, errors.New("not a regular file")
	}
	if f.Size = st.Size(); f.Size > d.max {
		return buf, fmt.Errorf("%d bytes, over the limit of %d", f.Size, d.max)
	}
	buf = slices.Grow(buf[:0], int(f.Size))[:f.Size]
	if _, err := io.ReadFull(fh, buf); err != nil {
		return buf, err
	}
	if len(buf) < 2 || buf[0] != 0xFF || buf[1] != markerSOI {
		return buf, fmt.Errorf("%w: no SOI marker", ErrNotJPEG)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(buf))
	data, cerr := CheckJPEG(buf)
	if err != nil {
		if errors.Is(cerr, ErrCutJPEG) { // a JPEG whose header the end of the file cuts
			return buf, cerr
		}
		return buf, fmt.Errorf("%w: image/jpeg: %v", ErrNotJPEG, err)
	}
	f.Width, f.Height = cfg.Width, cfg.Height
	if cerr != nil {
		if !data {
			return buf, cerr
		}
		f.Cut = strings.TrimPrefix(cerr.Error(), "media: ")
	}
	return buf, nil
}

// ErrCutJPEG: a JPEG file ends before its end-of-image marker.
// ErrDamagedJPEG: a JPEG's segments are broken before its end-of-image
// marker (no marker where one must be, a segment length under 2).
var (
	ErrCutJPEG     = errors.New("media: JPEG cut short")
	ErrDamagedJPEG = errors.New("media: JPEG damaged")
)

// CheckJPEG walks a JPEG file's segments to its first scan, then through
// the entropy-coded data (and the segments and scans that follow, as in a
// progressive JPEG) to the end-of-image marker (FF D9); bytes after it
// are not looked at. It returns nil for a whole image. Otherwise the error
// wraps ErrCutJPEG (the file ends first), ErrDamagedJPEG (a broken
// segment) or ErrNotJPEG (no SOI marker) and names the offset where the
// image stops, and data says whether scan data came before that (a
// viewer shows the part a cut image holds). Every step moves forward, so
// the work is bounded by len(b).
func CheckJPEG(b []byte) (data bool, err error) {
	if len(b) < 2 || b[0] != 0xFF || b[1] != markerSOI {
		return false, fmt.Errorf("%w: no SOI marker", ErrNotJPEG)
	}
	cut := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCutJPEG, fmt.Sprintf(format, args...))
	}
	for pos := 2; ; {
		if pos >= len(b) {
			if data {
				return true, cut("no end-of-image marker: the file's %d bytes end after the image data", len(b))
			}
			return false, cut("the file's %d bytes end before its image data", len(b))
		}
		if b[pos] != 0xFF {
			return data, fmt.Errorf("%w: no marker at byte %d (of %d), where a segment should start", ErrDamagedJPEG, pos, len(b))
		}
		for pos+1 < len(b) && b[pos+1] == 0xFF { // fill bytes
			pos++
		}
		if pos+1 >= len(b) {
			pos = len(b)
			continue
		}
		m := b[pos+1]
		switch {
		case m == markerEOI:
			if !data {
				return false, cut("an end-of-image marker at byte %d before any image data", pos)
			}
			return true, nil
		case m == 0x01 || (m >= 0xD0 && m <= 0xD7): // TEM, RSTn: no length
			pos += 2
			continue
		}
		if pos+4 > len(b) {
			return data, cut("the file's %d bytes end inside the header of segment 0x%02X at byte %d", len(b), m, pos)
		}
		n := int(binary.BigEndian.Uint16(b[pos+2:]))
		if n < 2 {
			return data, fmt.Errorf("%w: segment 0x%02X at byte %d has length %d", ErrDamagedJPEG, m, pos, n)
		}
		if pos+2+n > len(b) {
			return data, cut("the file's %d bytes end inside segment 0x%02X at byte %d (%d bytes long)", len(b), m, pos, n+2)
		}
		pos += 2 + n
		if m != markerSOS {
			continue
		}
		// Entropy-coded data: FF is followed by 00 (a stuffed FF), a
		// restart marker, or a fill byte; any other marker ends the scan.
		start := pos
		for pos < len(b) {
			i := bytes.IndexByte(b[pos:], 0xFF)
			if i < 0 {
				pos = len(b)
				break
			}
			pos += i
			if pos+1 >= len(b) {
				pos = len(b)
				break
			}
			if c := b[pos+1]; c == 0x00 || (c >= 0xD0 && c <= 0xD7) {
				pos += 2
				continue
			} else if c == 0xFF {
				pos++
				continue
			}
			break
		}
		data = data || pos > start
	}
}

// Dir returns the directory.
func (d *JPEGDir) Dir() string { return d.dir }

// Frames returns the frames sorted by time, ties by name. The slice is
// shared: do not modify it.
func (d *JPEGDir) Frames() []JPEGFrame { return d.frames }

// Skipped returns the entries left out, in name order, with the reason.
// The slice is shared: do not modify it.
func (d *JPEGDir) Skipped() []Skip { return d.skipped }

// ReadFrame appends the bytes of frame i (as the file holds them now) to
// dst and returns it.
func (d *JPEGDir) ReadFrame(i int, dst []byte) ([]byte, error) {
	if i < 0 || i >= len(d.frames) {
		return dst, fmt.Errorf("media: frame %d of %d", i, len(d.frames))
	}
	fh, err := os.Open(filepath.Join(d.dir, d.frames[i].Name))
	if err != nil {
		return dst, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return dst, err
	}
	if st.Size() > d.max {
		return dst, fmt.Errorf("media: %s: %d bytes, over the limit of %d", d.frames[i].Name, st.Size(), d.max)
	}
	n := len(dst)
	dst = slices.Grow(dst, int(st.Size()))[:n+int(st.Size())]
	m, err := io.ReadFull(fh, dst[n:])
	return dst[:n+m], err
}

// naturalCompare orders names as people do: runs of digits by their
// value ("img2" < "img10"), the rest byte by byte; names equal in that
// order compare as plain strings.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			x := strings.TrimLeft(a[si:i], "0")
			y := strings.TrimLeft(b[sj:j], "0")
			if len(x) != len(y) {
				return len(x) - len(y)
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
			continue
		}
		if a[i] != b[j] {
			return int(a[i]) - int(b[j])
		}
		i++
		j++
	}
	if c := (len(a) - i) - (len(b) - j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// JPEGDirWriter writes images into a directory, one file per frame named
// by its time: "<19-digit ns>.jpg" (".png", ".webp", ".avif" for those
// formats), with the bytes exactly as given. A second frame at the same
// nanosecond gets "_1", "_2", ... before the extension, which sorts after
// the first and reads back the same time. It never overwrites a file. It
// is not safe for concurrent use.
type JPEGDirWriter struct {
	dir  string
	name []byte
}

// CreateJPEGDir creates dir (and its parents) if needed and returns a
// writer into it.
func CreateJPEGDir(dir string) (*JPEGDirWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &JPEGDirWriter{dir: dir}, nil
}

// imageExt is the file extension for a CompressedImage format.
func imageExt(format string) string {
	switch format {
	case "jpeg", "jpg", "":
		return ".jpg"
	case "png", "webp", "avif":
		return "." + format
	}
	return ".bin"
}

// maxSameTime bounds the "_N" suffixes tried for frames at one nanosecond.
const maxSameTime = 10000

// Write writes one image taken at tsNs (ns since the epoch, not negative)
// and returns the file name it chose.
func (w *JPEGDirWriter) Write(tsNs int64, format string, data []byte) (string, error) {
	if tsNs < 0 {
		return "", fmt.Errorf("media: time %d before 1970 cannot name a file", tsNs)
	}
	ext := imageExt(format)
	for k := 0; k < maxSameTime; k++ {
		w.name = strconv.AppendInt(w.name[:0], tsNs, 10)
		if pad := 19 - len(w.name); pad > 0 {
			w.name = append(w.name[:0], "0000000000000000000"[:pad]...)
			w.name = strconv.AppendInt(w.name, tsNs, 10)
		}
		if k > 0 {
			w.name = append(w.name, '_')
			w.name = strconv.AppendInt(w.name, int64(k), 10)
		}
		w.name = append(w.name, ext...)
		name := string(w.name)
		f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("media: %d files already named after time %d in %s", maxSameTime, tsNs, w.dir)
}

// Close syncs the directory, so the names are durable (the files' data is
// not synced: this is an export, not the recorder's durable path).
func (w *JPEGDirWriter) Close() error {
	d, err := os.Open(w.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
