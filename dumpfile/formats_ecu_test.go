//go:build ecu

package dumpfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
)

// The ECU build's formats table has no camera files (camera_ecu.go).
var (
	wantCameraFormats []Format
	wantReadable      = "pack, MCAP, JSON lines, candump log or ASC"
	wantCameraStarts  = ""
)

// TestECUCameraFiles: the ECU build reads no camera files, and says so: an
// MP4 file (on disk or in memory) and a JPEG folder are ErrUnknownFormat
// naming the file, what it is and that the full build reads it; NotBuilt
// refuses jpeg-dir and mp4, and no other format.
func TestECUCameraFiles(t *testing.T) {
	dir := t.TempDir()
	mp4 := filepath.Join(dir, "clip.mp4")
	os.WriteFile(mp4, []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"), 0o644)
	frames := filepath.Join(dir, "frames")
	os.Mkdir(frames, 0o755)
	os.WriteFile(filepath.Join(frames, "1.JPG"), []byte("\xff\xd8\xff"), 0o644)
	const says = "camera files (JPEG folders, MP4) are not in this build of edr-lite (the ECU build, go build -tags ecu): the full build reads and writes them (docs/ecu.md)"
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"Detect mp4", mp4 + ": dumpfile: not a " + wantReadable + " file: an MP4 file: " + says, func() error { _, err := Detect(mp4); return err }()},
		{"Open mp4", mp4 + ": dumpfile: not a " + wantReadable + " file: an MP4 file: " + says, func() error { _, err := Open(mp4); return err }()},
		{"OpenBytes mp4", "clip: dumpfile: not a " + wantReadable + " file: an MP4 file: " + says, func() error {
			b, _ := os.ReadFile(mp4)
			_, err := OpenBytes("clip", b, mcap.ReaderOptions{})
			return err
		}()},
		{"Detect jpeg-dir", frames + ": dumpfile: not a " + wantReadable + " file: a JPEG folder: " + says, func() error { _, err := Detect(frames); return err }()},
		{"NotBuilt mp4", "--format mp4: " + says, NotBuilt(FormatMP4)},
		{"NotBuilt jpeg-dir", "--format jpeg-dir: " + says, NotBuilt(FormatJPEGDir)},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, c.err, c.want)
		}
		if strings.HasPrefix(c.name, "NotBuilt") != !errors.Is(c.err, ErrUnknownFormat) {
			t.Errorf("%s: %v: ErrUnknownFormat %v", c.name, c.err, errors.Is(c.err, ErrUnknownFormat))
		}
	}
	for _, f := range Formats() {
		if err := NotBuilt(f.Name); err != nil || f.Camera {
			t.Errorf("format %s in the table: NotBuilt %v, Camera %v", f.Name, err, f.Camera)
		}
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Detect(empty); err == nil || !strings.Contains(err.Error(), "a directory without .jpg or .jpeg files") {
		t.Errorf("an empty directory: %v", err)
	}
}
