package report

import (
	"bytes"
	"errors"
	"image/jpeg"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// videoDump writes a pack dump whose camera/video topic holds the samples
// of an H.264 MP4 made by ffmpeg (2 s at 30 fps, a key frame every 15) as
// foxglove.CompressedVideo messages, with a trigger at 1 s.
func videoDump(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian: apt-get install ffmpeg; .ci/run installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	mp4 := filepath.Join(dir, "cam.mp4")
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
		"-t", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-bf", "2", "-g", "15", mp4).CombinedOutput()
	if err != nil {
		t.Skipf("ffmpeg cannot make an H.264 file here: %v %s", err, out)
	}
	const t0 = int64(1796218339) * 1e9
	m, err := media.OpenMP4(mp4, media.MP4Options{StartNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := filepath.Join(dir, "video.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	var s media.Sample
	n := 0
	for ; ; n++ {
		if err := m.Next(&s); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		// capture in decode order, a frame interval apart
		capNs := t0 + int64(n)*int64(1e9)/30
		if err := w.Add("camera/video", "", nil, s.PTSNs, capNs, media.AppendCompressedVideo(nil, s.PTSNs, "cam", "h264", s.Data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "video", TimeNs: t0 + 1e9, PreNs: 1e9, PostNs: 1e9}},
		StartNs: t0, EndNs: t0 + 2e9}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 60 {
		t.Fatalf("%d samples", n)
	}
	return p
}

// TestVideoThumbnails: key frames of a CompressedVideo topic are decoded
// by ffmpeg into thumbnails; without a video decoder every slot is a
// placeholder saying why.
func TestVideoThumbnails(t *testing.T) {
	p := videoDump(t)
	video := map[string]schema.Type{"camera/video": {MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{
		Name: media.SchemaCompressedVideo, Encoding: schema.SchemaProtobuf, Data: media.CompressedVideoDescriptor()}}}
	r, err := FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: video, Thumbs: 5, VideoDecoder: FindVideoDecoder()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cameras) != 1 || len(r.Cameras[0].Frames) != 5 {
		t.Fatalf("cameras %+v", r.Cameras)
	}
	keyNs := map[int64]bool{} // key frames every 15 samples: 0, 0.5, 1, 1.5 s
	for k := int64(0); k < 4; k++ {
		keyNs[int64(1796218339)*1e9+k*15*int64(1e9)/30] = true
	}
	// strip times 0, 0.5, 1, 1.5, 2 s: the first four are key frames; the
	// last has none nearer to it than to 1.5 s
	frames := r.Cameras[0].Frames
	if !strings.Contains(frames[4].Missing, "no key frame nearer to this time") {
		t.Errorf("last frame: %q", frames[4].Missing)
	}
	for i, f := range frames[:4] {
		if f.Missing != "" || f.Width != 320 || f.Height != 240 || f.Format != "h264" || !keyNs[f.TimeNs] {
			t.Errorf("frame %d: %dx%d %s at %d, missing %q", i, f.Width, f.Height, f.Format, f.TimeNs, f.Missing)
			continue
		}
		c, err := jpeg.DecodeConfig(bytes.NewReader(f.Thumb))
		if err != nil || c.Width != DefaultThumbWidth {
			t.Errorf("frame %d thumbnail: %v %+v", i, err, c)
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), `<img src="data:image/jpeg;base64,`); n != 4 {
		t.Errorf("%d video thumbnails in the page", n)
	}

	r, err = FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: video, Thumbs: 5}})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range r.Cameras[0].Frames[:4] {
		if f.Thumb != nil || !strings.Contains(f.Missing, "no video decoder of its own and ffmpeg is not installed") {
			t.Errorf("frame %d without a decoder: %q", i, f.Missing)
		}
	}
}
