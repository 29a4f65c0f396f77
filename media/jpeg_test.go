package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func utc(y, mo, d, h, mi, s, ns int) int64 {
	return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC).UnixNano()
}

func TestNameTime(t *testing.T) {
	plus2 := time.FixedZone("", 2*3600)
	want := utc(2026, 12, 2, 13, 32, 22, 52_000_000)
	for _, c := range []struct {
		name string
		loc  *time.Location
		ns   int64
		ok   bool
	}{
		{"1764682342052000000.jpg", nil, 1764682342052000000, true},
		{"cam0_1764682342052000001.jpeg", nil, 1764682342052000001, true},
		{"0000000000000000123.jpg", nil, 123, true}, // 19 digits: any value
		{"cam_20261202T133222.052Z.jpeg", nil, want, true},
		{"20261202_133222_052000.jpg", nil, want, true},
		{"20261202_133222_052000000.jpg", nil, want, true},
		{"2026-12-02T13:32:22.052+01:00.jpg", nil, want - 3600e9, true},
		{"2026-12-02T13-32-22,052-0130.jpg", nil, want + 5400e9, true},
		{"2026-12-02 13:32:22.052Z.jpg", nil, want, true},
		{"20261202133222.jpg", nil, want - 52e6, true},
		{"20261202T133222.jpg", plus2, want - 52e6 - 7200e9, true},
		{"20261202T133222.0520000009.jpg", nil, 0, false},   // 10 fraction digits touch a digit
		{"20261202_133222_001.jpg", nil, want - 52e6, true}, // "_001" is a counter, not a fraction
		{"img_1764682342052.jpg", nil, 1764682342052e6, true},
		{"img_1764682342052001.jpg", nil, 1764682342052001e3, true},
		{"img_1764682342.jpg", nil, 1764682342e9, true},
		{"frame_0000000123.jpg", nil, 0, false}, // 10 digits, not a plausible epoch
		{"frame_000123.jpg", nil, 0, false},
		{"12345678901234567890.jpg", nil, 0, false}, // 20 digits
		{"99999999999999999999.jpg", nil, 0, false},
		{"9999999999999999999.jpg", nil, 0, false}, // 19 digits over int64
		{"20261302T000000Z.jpg", nil, 0, false},
		{"20260230T000000Z.jpg", nil, 0, false},
		{"20261202T246000Z.jpg", nil, 0, false},
		{"20261202T133222+1500.jpg", nil, 0, false}, // no such zone
		{"120261202T133222Z.jpg", nil, 0, false},    // touches a digit
		{"20261202T133222Z_1764682342052000000.jpg", nil, want - 52e6, true},
		{"1764682342052000000_20261202T133222Z.jpg", nil, 1764682342052000000, true},
		{"", nil, 0, false},
	} {
		ns, ok := NameTime(c.name, c.loc)
		if ok != c.ok || ns != c.ns {
			t.Errorf("NameTime(%q) = %d %v, want %d %v", c.name, ns, ok, c.ns, c.ok)
		}
	}
}

// TestNameTimeRoundTrip: a time formatted with each documented pattern
// reads back as itself (to the pattern's precision).
func TestNameTimeRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ns := rapid.Int64Range(utc(2002, 1, 1, 0, 0, 0, 0), utc(2099, 12, 31, 23, 59, 59, 0)).Draw(rt, "ns")
		tm := time.Unix(0, ns).UTC()
		trunc := func(d int64) int64 { return ns - ns%d }
		for _, c := range []struct {
			name string
			want int64
		}{
			{strings.Repeat("0", 19-len(itoa(ns))) + itoa(ns) + ".jpg", ns},
			{tm.Format("20060102T150405.000000000Z") + ".jpg", ns},
			{"cam_" + tm.Format("20060102T150405.000Z"), trunc(1e6)},
			{tm.Format("20060102_150405_") + string(appendInt(nil, 1e6+ns%1e9/1e3))[1:] + ".jpeg", trunc(1e3)},
			{tm.In(time.FixedZone("", -3*3600-1800)).Format("2006-01-02T15:04:05.000000-07:00") + ".jpg", trunc(1e3)},
			{tm.Format("20060102150405") + ".jpg", trunc(1e9)},
			{"x" + itoa(ns/1e6) + ".jpg", trunc(1e6)},
		} {
			if got, ok := NameTime(c.name, nil); !ok || got != c.want {
				rt.Fatalf("NameTime(%q) = %d %v, want %d", c.name, got, ok, c.want)
			}
		}
	})
}

func itoa(v int64) string { return string(appendInt(nil, v)) }

func appendInt(b []byte, v int64) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// exifBlock builds an APP1 EXIF payload ("Exif\0\0" + TIFF): IFD0 with
// only the Exif IFD pointer, the Exif IFD with the given ASCII tags (empty
// values left out), in either byte order.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func exifBlock(bo byteOrder, dto, subsec, offset string) []byte {
	type tag struct {
		id  uint16
		val string
	}
	var tags []tag
	for _, tg := range []tag{{tagDateTimeOriginal, dto}, {tagOffsetTimeOriginal, offset}, {tagSubSecTimeOriginal, subsec}} {
		if tg.val != "" {
			tags = append(tags, tg)
		}
	}
	tiff := make([]byte, 8)
	if bo == binary.LittleEndian {
		copy(tiff, "II")
	} else {
		copy(tiff, "MM")
	}
	bo.PutUint16(tiff[2:], 42)
	bo.PutUint32(tiff[4:], 8)
	// IFD0: 1 entry, next IFD 0.
	tiff = bo.AppendUint16(tiff, 1)
	exifOff := uint32(8 + 2 + ifdEntry + 4)
	tiff = bo.AppendUint16(tiff, tagExifIFD)
	tiff = bo.AppendUint16(tiff, tiffLONG)
	tiff = bo.AppendUint32(tiff, 1)
	tiff = bo.AppendUint32(tiff, exifOff)
	tiff = bo.AppendUint32(tiff, 0)
	data := exifOff + 2 + uint32(len(tags))*ifdEntry + 4
	var area []byte
	tiff = bo.AppendUint16(tiff, uint16(len(tags)))
	for _, tg := range tags {
		v := append([]byte(tg.val), 0)
		tiff = bo.AppendUint16(tiff, tg.id)
		tiff = bo.AppendUint16(tiff, tiffASCII)
		tiff = bo.AppendUint32(tiff, uint32(len(v)))
		if len(v) <= 4 {
			tiff = append(tiff, append(v, 0, 0, 0, 0)[:4]...)
		} else {
			tiff = bo.AppendUint32(tiff, data+uint32(len(area)))
			area = append(area, v...)
		}
	}
	tiff = bo.AppendUint32(tiff, 0)
	tiff = append(tiff, area...)
	return append([]byte("Exif\x00\x00"), tiff...)
}

// withAPP1 inserts an APP1 segment right after a JPEG's SOI.
func withAPP1(jpg, payload []byte) []byte {
	out := append([]byte{}, jpg[:2]...)
	out = append(out, 0xFF, markerAPP1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(payload)+2))
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

// testJPEG encodes a small image whose pixels depend on seed.
func testJPEG(t testing.TB, seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32+seed%7, 24))
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			img.Set(x, y, color.RGBA{uint8(x*8 + seed), uint8(y * 10), uint8(seed * 40), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEXIFTime(t *testing.T) {
	base := testJPEG(t, 1)
	want := utc(2026, 12, 2, 13, 32, 22, 0)
	for _, c := range []struct {
		name              string
		bo                byteOrder
		dto, subsec, zone string
		loc               *time.Location
		ns                int64
		err               error
	}{
		{"LE subsec zone", binary.LittleEndian, "2026:12:02 13:32:22", "352", "+01:00", nil, want + 352e6 - 3600e9, nil},
		{"BE subsec", binary.BigEndian, "2026:12:02 13:32:22", "05", "", nil, want + 50e6, nil},
		{"no zone, loc", binary.BigEndian, "2026:12:02 13:32:22", "", "", time.FixedZone("", -3600), want + 3600e9, nil},
		{"long subsec", binary.LittleEndian, "2026:12:02 13:32:22", "1234567891", "-02:30", nil, want + 123456789 + 9000e9, nil},
		{"blank date", binary.LittleEndian, "    :  :     :  :  ", "", "", nil, 0, ErrNoTime},
		{"Feb 30", binary.LittleEndian, "2026:02:30 13:32:22", "", "", nil, 0, ErrNoTime},
		{"no date", binary.LittleEndian, "", "123", "", nil, 0, ErrNoTime},
	} {
		jpg := withAPP1(base, exifBlock(c.bo, c.dto, c.subsec, c.zone))
		ns, err := EXIFTime(jpg, c.loc)
		if ns != c.ns || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: %d %v, want %d %v", c.name, ns, err, c.ns, c.err)
		}
	}
	if _, err := EXIFTime(base, nil); !errors.Is(err, ErrNoTime) {
		t.Errorf("no EXIF: %v", err)
	}
	if _, err := EXIFTime([]byte("GIF89a"), nil); !errors.Is(err, ErrNotJPEG) {
		t.Errorf("not a JPEG: %v", err)
	}
	// Every prefix of a JPEG with EXIF is refused or read, never a panic.
	jpg := withAPP1(base, exifBlock(binary.LittleEndian, "2026:12:02 13:32:22", "352", "+01:00"))
	for n := range len(jpg) {
		EXIFTime(jpg[:n], nil)
	}
}

// TestEXIFTimeExiftool: EXIF written by exiftool (an independent writer)
// reads back; skipped when exiftool is not installed.
func TestEXIFTimeExiftool(t *testing.T) {
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Skip("exiftool not installed (Debian: libimage-exiftool-perl)")
	}
	p := filepath.Join(t.TempDir(), "a.jpg")
	if err := os.WriteFile(p, testJPEG(t, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("exiftool", "-q", "-overwrite_original", "-DateTimeOriginal=2026:12:02 13:32:22",
		"-SubSecTimeOriginal=052", "-OffsetTimeOriginal=+09:00", "-Make=edr-test", p).CombinedOutput()
	if err != nil {
		t.Fatalf("exiftool: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(p)
	if ns, err := EXIFTime(b, nil); err != nil || ns != utc(2026, 12, 2, 4, 32, 22, 52e6) {
		t.Fatalf("%d %v", ns, err)
	}
}

// TestJPEGDirRoundTrip: a folder of JPEGs timed by name patterns and EXIF,
// with non-JPEGs and files without a time, reads as frames in time order
// with the right times and skips; written back, it gives files named by
// their time with byte-identical contents, which read back the same.
func TestJPEGDirRoundTrip(t *testing.T) {
	dir := t.TempDir()
	t0 := utc(2026, 12, 2, 13, 32, 22, 0)
	files := map[string][]byte{
		"1796218342552000000.jpg":       testJPEG(t, 1),
		"cam_20261202T133222.152Z.jpeg": testJPEG(t, 2),
		"20261202_133222_252000.JPG":    testJPEG(t, 3),
		"IMG_0001.jpg":                  withAPP1(testJPEG(t, 4), exifBlock(binary.BigEndian, "2026:12:02 14:32:22", "352", "+01:00")),
		"IMG_0002.jpg":                  withAPP1(testJPEG(t, 5), exifBlock(binary.LittleEndian, "2026:12:02 13:32:22", "452", "")),
		"tie_20261202T133222.452Z.jpg":  testJPEG(t, 6), // same time as IMG_0002: name order
		"IMG_0003.jpg":                  testJPEG(t, 7), // no time
		"notes.txt":                     []byte("hello"),
		"garbage.jpg":                   []byte("\xff\xd8 not really"),
		"empty.jpeg":                    nil,
		"png.jpg":                       []byte("\x89PNG\r\n\x1a\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.jpg"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := OpenJPEGDir(dir, JPEGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		ns   int64
		src  TimeSource
	}{
		{"cam_20261202T133222.152Z.jpeg", t0 + 152e6, TimeFromName},
		{"20261202_133222_252000.JPG", t0 + 252e6, TimeFromName},
		{"IMG_0001.jpg", t0 + 352e6, TimeFromEXIF},
		{"IMG_0002.jpg", t0 + 452e6, TimeFromEXIF},
		{"tie_20261202T133222.452Z.jpg", t0 + 452e6, TimeFromName},
		{"1796218342552000000.jpg", t0 + 552e6, TimeFromName},
	}
	fr := d.Frames()
	if len(fr) != len(want) {
		t.Fatalf("frames %+v", fr)
	}
	for i, w := range want {
		if fr[i].Name != w.name || fr[i].TimeNs != w.ns || fr[i].Source != w.src || fr[i].Width < 32 || fr[i].Height != 24 {
			t.Errorf("frame %d: %+v, want %+v", i, fr[i], w)
		}
	}
	skipped := map[string]string{}
	for _, s := range d.Skipped() {
		skipped[s.Name] = s.Reason
	}
	for name, reason := range map[string]string{
		"IMG_0003.jpg": "no time", "notes.txt": "not a .jpg", "garbage.jpg": "not a JPEG", "empty.jpeg": "not a JPEG",
		"png.jpg": "no SOI", "sub.jpg": "not a regular file",
	} {
		if !strings.Contains(skipped[name], reason) {
			t.Errorf("skip %s: %q, want it to say %q", name, skipped[name], reason)
		}
	}
	if len(skipped) != 6 {
		t.Errorf("skipped %v", skipped)
	}

	out := filepath.Join(t.TempDir(), "out")
	w, err := CreateJPEGDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for i, f := range fr {
		if buf, err = d.ReadFrame(i, buf[:0]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, files[f.Name]) {
			t.Fatalf("%s: ReadFrame gave other bytes", f.Name)
		}
		name, err := w.Write(f.TimeNs, "jpeg", buf)
		if err != nil {
			t.Fatal(err)
		}
		if base := strings.TrimSuffix(strings.TrimSuffix(name, ".jpg"), "_1"); len(base) != 19 {
			t.Errorf("written name %q", name)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := OpenJPEGDir(out, JPEGOptions{Sources: []TimeSource{TimeFromName}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.Skipped()) != 0 || len(d2.Frames()) != len(fr) {
		t.Fatalf("read back %+v skipped %+v", d2.Frames(), d2.Skipped())
	}
	for i, f := range d2.Frames() {
		if f.TimeNs != fr[i].TimeNs {
			t.Errorf("frame %d read back at %d, written at %d", i, f.TimeNs, fr[i].TimeNs)
		}
		b, err := d2.ReadFrame(i, nil)
		if err != nil || !bytes.Equal(b, files[fr[i].Name]) {
			t.Errorf("frame %d (%s from %s): bytes differ (%v)", i, f.Name, fr[i].Name, err)
		}
	}
}

func TestJPEGDirRate(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"img10.jpg", "img2.jpg", "img1.jpg", "20261202T133222Z.jpg"} {
		if err := os.WriteFile(filepath.Join(dir, name), testJPEG(t, len(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := utc(2026, 1, 1, 0, 0, 0, 0)
	d, err := OpenJPEGDir(dir, JPEGOptions{Sources: []TimeSource{TimeFromRate}, StartNs: start, FrameIntervalNs: 40e6})
	if err != nil {
		t.Fatal(err)
	}
	// Natural name order: digits before letters, img1 < img2 < img10.
	var got []string
	for i, f := range d.Frames() {
		got = append(got, f.Name)
		if f.TimeNs != start+int64(i)*40e6 || f.Source != TimeFromRate {
			t.Errorf("%+v", f)
		}
	}
	if strings.Join(got, " ") != "20261202T133222Z.jpg img1.jpg img2.jpg img10.jpg" {
		t.Errorf("order %v", got)
	}
	// Name first, rate for the rest: the rate index counts every JPEG.
	d, err = OpenJPEGDir(dir, JPEGOptions{Sources: []TimeSource{TimeFromName, TimeFromRate}, StartNs: start, FrameIntervalNs: 40e6})
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Frames(); len(f) != 4 || f[0].Name != "img1.jpg" || f[0].TimeNs != start+40e6 || f[3].Source != TimeFromName {
		t.Errorf("%+v", f)
	}
	if _, err := OpenJPEGDir(dir, JPEGOptions{Sources: []TimeSource{TimeFromRate}}); err == nil {
		t.Error("rate without an interval accepted")
	}
}

func TestJPEGDirWriterNames(t *testing.T) {
	w, err := CreateJPEGDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns     int64
		format string
		want   string
	}{
		{1764682342052000000, "jpeg", "1764682342052000000.jpg"},
		{1764682342052000000, "jpeg", "1764682342052000000_1.jpg"},
		{1764682342052000000, "jpeg", "1764682342052000000_2.jpg"},
		{5, "png", "0000000000000000005.png"},
		{7, "tiff", "0000000000000000007.bin"},
	} {
		if name, err := w.Write(c.ns, c.format, []byte{1}); err != nil || name != c.want {
			t.Errorf("Write(%d, %s) = %q %v, want %q", c.ns, c.format, name, err, c.want)
		}
	}
	if _, err := w.Write(-1, "jpeg", nil); err == nil {
		t.Error("negative time accepted")
	}
	if naturalCompare("1764682342052000000.jpg", "1764682342052000000_1.jpg") >= 0 {
		t.Error("a same-time suffix must sort after the plain name")
	}
}

// sosEnd returns the offset just after a JPEG's first SOS segment (where
// its image data starts).
func sosEnd(t testing.TB, b []byte) int {
	for pos := 2; pos+4 <= len(b); {
		m, n := b[pos+1], int(binary.BigEndian.Uint16(b[pos+2:]))
		pos += 2 + n
		if m == markerSOS {
			return pos
		}
	}
	t.Fatal("no SOS segment")
	return 0
}

// TestCheckJPEG: a whole image (also with bytes after its end marker, a
// restart marker, fill bytes and a second scan after a table segment, as
// progressive JPEGs have) is whole; every prefix is cut: before the image
// data without data, inside it with data; a tail of zeros (a file whose
// last blocks were never written) is cut; the reason names the offset.
func TestCheckJPEG(t *testing.T) {
	whole := testJPEG(t, 3)
	start := sosEnd(t, whole)
	eoi := len(whole) - 2
	if whole[eoi] != 0xFF || whole[eoi+1] != markerEOI {
		t.Fatal("image/jpeg output does not end in EOI")
	}
	scan := whole[start:eoi]
	dht := []byte{0xFF, 0xC4, 0x00, 0x05, 0x10, 0x00, 0x00} // a table segment's shape
	multi := slices.Concat(whole[:eoi], []byte{0xFF, 0xD0, 0xFF, 0xFF}, dht, whole[sosEnd(t, whole)-14:start], scan, whole[eoi:])
	for name, b := range map[string][]byte{
		"whole":         whole,
		"trailing data": slices.Concat(whole, []byte("vendor trailer \xff\xd8")),
		"two scans":     multi,
	} {
		if data, err := CheckJPEG(b); err != nil || !data {
			t.Errorf("%s: %v %v", name, data, err)
		}
	}
	for n := 0; n < len(whole)-1; n++ {
		data, err := CheckJPEG(whole[:n])
		if !errors.Is(err, ErrCutJPEG) && !(n < 2 && errors.Is(err, ErrNotJPEG)) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
		if data != (n > start) {
			t.Fatalf("cut to %d bytes (image data from %d): data %v, %v", n, start, data, err)
		}
	}
	zeros := slices.Concat(whole[:start+len(scan)/2], make([]byte, 4096))
	if data, err := CheckJPEG(zeros); !data || !errors.Is(err, ErrCutJPEG) ||
		!strings.Contains(err.Error(), "no end-of-image marker: the file's "+strconv.Itoa(len(zeros))+" bytes end after the image data") {
		t.Errorf("zero tail: %v %v", data, err)
	}
	if _, err := CheckJPEG(whole[:start-3]); err == nil || !strings.Contains(err.Error(), "end inside segment 0xDA at byte") {
		t.Errorf("cut in the SOS header: %v", err)
	}
}

// TestJPEGDirCut: in a folder, a JPEG cut inside its image data is listed
// as a frame with the reason in Cut; one cut before its image data is
// skipped as damaged; whole ones have no Cut.
func TestJPEGDirCut(t *testing.T) {
	dir := t.TempDir()
	whole := testJPEG(t, 1)
	start := sosEnd(t, whole)
	files := map[string][]byte{
		"1796218342052000000.jpg": whole,
		"1796218342085000000.jpg": whole[:start+(len(whole)-start)/2],
		"1796218342118000000.jpg": whole[:start-1],
		"1796218342151000000.jpg": whole[:100], // before image/jpeg has the frame header
		"1796218342184000000.jpg": []byte("\xff\xd8 not a JPEG at all"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenJPEGDir(dir, JPEGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fr, sk := d.Frames(), d.Skipped()
	if len(fr) != 2 || fr[0].Cut != "" || !strings.HasPrefix(fr[1].Cut, "JPEG cut short: no end-of-image marker") ||
		len(sk) != 3 || !sk[0].Damaged || sk[0].Name != "1796218342118000000.jpg" ||
		!strings.Contains(sk[0].Reason, "end inside segment 0xDA") ||
		!sk[1].Damaged || !strings.Contains(sk[1].Reason, "JPEG cut short: the file's 100 bytes end inside segment") ||
		sk[2].Damaged || !strings.Contains(sk[2].Reason, "not a JPEG image") {
		t.Fatalf("frames %+v, skipped %+v", fr, sk)
	}
	b, err := d.ReadFrame(1, nil)
	if err != nil || !bytes.Equal(b, files[fr[1].Name]) {
		t.Fatalf("the cut frame reads %d bytes, %v", len(b), err)
	}
}
