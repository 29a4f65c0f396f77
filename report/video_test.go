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
	// slots: the last key frame at or before the trigger (1 s) and the
	// first after it, then 0.5 s, 1.5 s and 0.25 s (the middles of the
	// longest stretches not shown); 1.5 s shows the trigger's "after"
	// frame again and is left out: four key frames, 0, 0.5, 1 and 1.5 s
	if len(r.Cameras) != 1 || len(r.Cameras[0].Frames) != 4 {
		t.Fatalf("cameras %+v", r.Cameras)
	}
	keyNs := map[int64]bool{} // key frames every 15 samples: 0, 0.5, 1, 1.5 s
	for k := int64(0); k < 4; k++ {
		keyNs[int64(1796218339)*1e9+k*15*int64(1e9)/30] = true
	}
	frames := r.Cameras[0].Frames
	if frames[2].Side != "before" || frames[3].Side != "after" || frames[2].TimeNs != int64(1796218340)*1e9 {
		t.Errorf("the trigger's frames: %+v %+v", frames[2], frames[3])
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
