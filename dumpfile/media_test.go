//go:build !ecu

package dumpfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/media"
)

// TestCameraSources: a JPEG folder and an MP4 are detected (a directory of
// JPEGs; ftyp at byte 4), opened as one topic of CompressedImage /
// CompressedVideo messages with the protobuf schemas, merged in time
// order with a pack dump, and exported back (jpeg-dir byte for byte;
// mp4 the same samples); what cannot be done with them is refused.
func TestCameraSources(t *testing.T) {
	dir := t.TempDir()
	jd := filepath.Join(dir, "front")
	os.Mkdir(jd, 0o755)
	var img bytes.Buffer
	jpeg.Encode(&img, image.NewGray(image.Rect(0, 0, 8, 8)), nil)
	want := map[string][]byte{}
	for i := range 4 {
		name := fmt.Sprintf("%019d.jpg", int64(1e18)+int64(i)*25e6)
		b := append(bytes.Clone(img.Bytes()), byte(i)) // after EOI: still the same image header
		want[name] = b
		os.WriteFile(filepath.Join(jd, name), b, 0o644)
	}
	os.WriteFile(filepath.Join(jd, "notes.txt"), []byte("x"), 0o644)
	mp, _ := testMP4(t, dir, 10, 100) // samples every 33.3 ms from 1e18
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)

	for path, f := range map[string]string{jd: FormatJPEGDir, mp: FormatMP4} {
		if got, err := Detect(path); err != nil || got != f {
			t.Errorf("Detect(%s) = %q, %v; want %s", path, got, err, f)
		}
	}
	if _, err := Detect(empty); !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "a directory without .jpg") {
		t.Errorf("Detect(empty dir): %v", err)
	}
	b, _ := os.ReadFile(mp)
	if _, err := OpenBytes("x.mp4", b, mcap.ReaderOptions{}); err == nil || !strings.Contains(err.Error(), "not from memory") {
		t.Errorf("OpenBytes(mp4): %v", err)
	}
	if _, err := Verify(mp); err == nil || !strings.Contains(err.Error(), "camera data, not a dump") {
		t.Errorf("Verify(mp4): %v", err)
	}

	js, err := Open(jd)
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	if n := js.Notes(); len(n) != 1 || !strings.Contains(n[0], "notes.txt: not a .jpg") {
		t.Errorf("notes %q", n)
	}
	ms, err := Open(mp)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	for _, c := range []struct {
		s            *Source
		topic, typ   string
		n            uint64
		schemaPrefix []byte
	}{{js, "camera/front", media.SchemaCompressedImage, 4, media.CompressedImageDescriptor()},
		{ms, "camera/bench-100", media.SchemaCompressedVideo, 10, media.CompressedVideoDescriptor()}} {
		tp := c.s.Topics()
		if len(tp) != 1 || tp[0].Name != c.topic || tp[0].Type.Schema.Name != c.typ || tp[0].Messages != c.n ||
			tp[0].Type.MessageEncoding != "protobuf" || !bytes.Equal(tp[0].Type.Schema.Data, c.schemaPrefix) {
			t.Errorf("%s: topics %+v", c.s.Path, tp)
		}
	}
	pk := memDump(t, 0, []int64{1e18 - 1, 1e18 + 30e6, 1e18 + 60e6, 1e18 + 1e9}, false)
	defer pk.Close()
	m := NewMessages(pk, js, ms)
	var last int64
	count := map[string]int{}
	for {
		ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		msg := m.Message()
		if msg.TimeNs < last {
			t.Fatalf("out of order: %d after %d", msg.TimeNs, last)
		}
		last = msg.TimeNs
		count[msg.Name]++
		if msg.Name == "camera/front" {
			var v media.CompressedImage
			if err := media.DecodeCompressedImage(msg.Data, &v); err != nil || v.TimestampNs != msg.TimeNs || v.Format != "jpeg" || v.FrameID != "camera/front" {
				t.Errorf("image message %+v, %v", v, err)
			}
		}
	}
	if count["t"] != 4 || count["camera/front"] != 4 || count["camera/bench-100"] != 10 {
		t.Errorf("merged %v", count)
	}
	// SeekTime skips what is before
	if err := m.SeekTime(1e18 + 50e6); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Next(); !ok || m.Time() != 1e18+50e6 {
		t.Errorf("after SeekTime: %d", m.Time())
	}

	out := filepath.Join(dir, "back")
	if rep, err := ExportDir(js, FormatJPEGDir, out, ExportOptions{}); err != nil || rep.Messages != 4 {
		t.Fatalf("ExportDir: %+v, %v", rep, err)
	}
	for name, b := range want {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: %v, bytes equal %v", name, err, bytes.Equal(got, b))
		}
	}
	if _, err := ExportDir(js, FormatJPEGDir, out, ExportOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("ExportDir into a non-empty directory: %v", err)
	}
	if _, err := ExportDir(ms, FormatJPEGDir, filepath.Join(dir, "none"), ExportOptions{}); err == nil || !strings.Contains(err.Error(), "no topic of type foxglove.CompressedImage") {
		t.Errorf("ExportDir of a video: %v", err)
	}
	f, _ := os.Create(filepath.Join(dir, "back.mp4"))
	rep, err := Export(ms, FormatMP4, f, ExportOptions{})
	f.Close()
	if err != nil || rep.Messages != 10 {
		t.Fatalf("Export mp4: %+v, %v", rep, err)
	}
	if _, err := Export(ms, FormatMP4, &bytes.Buffer{}, ExportOptions{}); err == nil || !strings.Contains(err.Error(), "not a stream") {
		t.Errorf("Export mp4 to a stream: %v", err)
	}
	back, err := OpenMedia(filepath.Join(dir, "back.mp4"), FormatMP4, MediaOptions{StartNs: 1e18, HasStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if a, b := sourceMessages(t, ms), sourceMessages(t, back); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("mp4 remux differs:\n%v\n%v", a, b)
	}
}

// sourceMessages lists a video Source's messages: presentation time
// (producer time and timestamp) and the digest of the picture. (The
// decode times of a remux are derived from the SPS's reorder depth.)
func sourceMessages(t *testing.T, s *Source) []string {
	t.Helper()
	var out []string
	var v media.CompressedVideo
	err := s.InFileOrder(func(m *Message) error {
		if err := media.DecodeCompressedVideo(m.Data, &v); err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%d %d %x", m.GenNs, v.TimestampNs, sha256.Sum256(v.Data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
