package report

import (
	"bytes"
	"errors"
	"image/jpeg"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/schema"
)

// videoDump writes demodump's H.264 dump, or skips without ffmpeg.
func videoDump(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skipf("ffmpeg not installed (Debian: apt-get install ffmpeg; .ci/run installs it): %v", err)
	}
	p := filepath.Join(t.TempDir(), "video.pack")
	if err := demodump.WriteVideo(p); err != nil {
		if errors.Is(err, demodump.ErrNoFFmpeg) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return p
}

// TestVideoThumbnails: key frames of a CompressedVideo topic are decoded
// by ffmpeg into thumbnails; without a video decoder every slot is a
// placeholder saying why.
func TestVideoThumbnails(t *testing.T) {
	p := videoDump(t)
	video := map[string]schema.Type{demodump.VideoTopic: {MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{
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
		if f.Thumb != nil || !strings.Contains(f.Missing, "no video decoder of its own, and no ffmpeg is installed or given") {
			t.Errorf("frame %d without a decoder: %q", i, f.Missing)
		}
	}
}
