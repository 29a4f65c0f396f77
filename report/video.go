package report

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/edr-lite/edr-lite/media"
)

// videoTimeout bounds one key frame's decoding by the external decoder.
const videoTimeout = 20 * time.Second

// FindVideoDecoder returns the path of ffmpeg when it is installed, else
// "". edr-lite has no video decoder of its own; the report uses ffmpeg,
// when there is one, to turn a video key frame into a picture.
func FindVideoDecoder() string {
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		return ""
	}
	return p
}

// limitedBuffer keeps at most max bytes and reports overflow.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return 0, fmt.Errorf("output larger than %d bytes", b.max)
	}
	return b.Buffer.Write(p)
}

// videoThumb decodes one H.264 / H.265 key frame (Annex B with its
// parameter sets, as media.KeyFrame found it) with ffmpeg into a PNG and
// makes a thumbnail of it.
func videoThumb(ffmpeg, format string, data []byte, width int) ([]byte, int, int, error) {
	codec, err := media.ParseCodec(format)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %v", ErrNoImage, err)
	}
	if ffmpeg == "" {
		return nil, 0, 0, fmt.Errorf("%w: %s key frame not decoded: edr-lite has no video decoder of its own, and no ffmpeg is installed or given (--video-decoder)", ErrNoImage, format)
	}
	demux := "h264"
	if codec == media.CodecH265 {
		demux = "hevc"
	}
	ctx, cancel := context.WithTimeout(context.Background(), videoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", "-f", demux, "-i", "pipe:0",
		"-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "pipe:1")
	cmd.Stdin = bytes.NewReader(data)
	out := &limitedBuffer{max: 4*MaxPicturePixels + 1<<20}
	var errb limitedBuffer
	errb.max = 4096
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Run(); err != nil || out.Len() == 0 {
		msg := bytes.TrimSpace(errb.Bytes())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return nil, 0, 0, fmt.Errorf("%w: ffmpeg could not decode the %s key frame: %v %s", ErrNoImage, format, err, msg)
	}
	return imageThumb("png", out.Bytes(), width)
}
