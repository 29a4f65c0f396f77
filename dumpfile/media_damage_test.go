//go:build !ecu

package dumpfile

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMediaFactsJPEG: a JPEG folder's damaged files are counted by kind
// (cut short, broken after the image data: read; no image data:
// skipped), named one line each in Damaged (not in Notes), and summed up
// by Lost; a whole folder has none.
func TestMediaFactsJPEG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "front")
	os.Mkdir(dir, 0o755)
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 13)
	}
	jpeg.Encode(&b, img, nil)
	whole := b.Bytes()
	eoi := len(whole) - 2
	files := [][]byte{
		whole,
		whole[:eoi-10], // cut in its image data
		slices.Concat(whole[:eoi], []byte{0xFF, 0xC4, 0x00, 0x04, 1, 2, 'x', 'y'}), // a segment, then no marker
		whole[:300], // cut in its header
	}
	for i, f := range files {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%019d.jpg", int64(1e18)+int64(i)*1e6)), f, 0o644)
	}
	s, err := OpenMedia(dir, FormatJPEGDir, MediaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := s.Media()
	if f.CutJPEGs != 1 || f.BrokenJPEGs != 1 || f.EmptyJPEGs != 1 || len(s.Damaged()) != 3 || len(s.Notes()) != 0 ||
		s.Topics()[0].Messages != 3 {
		t.Fatalf("facts %+v, notes %q, topics %+v", f, s.Notes(), s.Topics())
	}
	if want := "1 JPEG cut short, read as it is; 1 JPEG damaged after the image data, read as it is; 1 JPEG without image data, skipped"; f.Lost() != want {
		t.Errorf("Lost %q, want %q", f.Lost(), want)
	}
	for i, d := range s.Damaged() {
		if !strings.HasPrefix(d, filepath.Join(dir, fmt.Sprintf("%019d.jpg", int64(1e18)+int64(i+1)*1e6))+": JPEG ") {
			t.Errorf("damaged line %d: %s", i, d)
		}
	}
	in, err := ReadInfo(dir)
	if err != nil || len(in.Damaged) != 3 {
		t.Errorf("ReadInfo: %v %q", err, in.Damaged)
	}
	os.Remove(filepath.Join(dir, fmt.Sprintf("%019d.jpg", int64(1e18)+1e6)))
	os.Remove(filepath.Join(dir, fmt.Sprintf("%019d.jpg", int64(1e18)+2e6)))
	os.Remove(filepath.Join(dir, fmt.Sprintf("%019d.jpg", int64(1e18)+3e6)))
	s2, err := OpenMedia(dir, FormatJPEGDir, MediaOptions{})
	if err != nil || s2.Damaged() != nil || s2.Media().Lost() != "" {
		t.Fatalf("whole folder: %v %q", err, s2.Damaged())
	}
	s2.Close()
}

// TestMP4NoStart: an MP4 without a creation time is ErrNoStart unless a
// start is given; a start putting a frame at or before 1970 is refused;
// with one, MediaFacts says where it came from.
func TestMP4NoStart(t *testing.T) {
	dir := t.TempDir()
	mp, _ := testMP4(t, dir, 10, 100) // created at 1e18
	if s, err := OpenMedia(mp, FormatMP4, MediaOptions{}); err != nil || s.Media().StartFrom != "the file's creation time" ||
		s.Media().StartNs != 1e18 {
		t.Fatalf("a dated file: %v %+v", err, s.Media())
	} else {
		s.Close()
	}
	b, _ := os.ReadFile(mp)
	at := bytes.Index(b, []byte("mvhd")) + 4 + 4 // version and flags, then creation_time
	v := b[at-4]
	if v == 1 {
		copy(b[at:at+8], make([]byte, 8))
	} else {
		copy(b[at:at+4], make([]byte, 4))
	}
	undated := filepath.Join(dir, "undated.mp4")
	os.WriteFile(undated, b, 0o644)
	if _, err := OpenMedia(undated, FormatMP4, MediaOptions{}); !errors.Is(err, ErrNoStart) || !strings.Contains(err.Error(), "--start mtime") {
		t.Fatalf("undated: %v", err)
	}
	if _, err := OpenMedia(undated, FormatMP4, MediaOptions{HasStart: true, StartNs: -1}); err == nil ||
		!strings.Contains(err.Error(), "not after 1970-01-01") {
		t.Fatalf("start before 1970: %v", err)
	}
	s, err := OpenMedia(undated, FormatMP4, MediaOptions{StartMtime: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := os.Stat(undated)
	if f := s.Media(); f.StartFrom != "the file's modification time" || f.StartNs >= st.ModTime().UnixNano() ||
		f.StartNs < st.ModTime().UnixNano()-2e9 {
		t.Errorf("mtime: %+v, modified %v", f, st.ModTime())
	}
}
