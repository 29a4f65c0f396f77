package fuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/report"
	"github.com/edr-lite/edr-lite/schema"
)

// tinyJPEG is a 24×16 JPEG (and tinyPNG the same picture as PNG).
func tinyPicture(format string) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 24, 16))
	for y := 0; y < 16; y++ {
		for x := 0; x < 24; x++ {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 10), uint8(y * 15), 128, 255})
		}
	}
	var b bytes.Buffer
	if format == "png" {
		png.Encode(&b, img)
	} else {
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 50})
	}
	return b.Bytes()
}

// reportSeed is a small pack dump the report reads every part of: a packed
// topic, a CompressedImage camera, a JSON-less raw topic, a trigger and
// accounting.
func reportSeed() []byte {
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{Writer: "fuzz", CreatedNs: 1e18, TargetFrameSize: 512})
	if err != nil {
		panic(err)
	}
	pic := tinyPicture("jpeg")
	for i := 0; i < 20; i++ {
		t := int64(1e18) + int64(i)*10e6
		w.Add("speed", "", nil, t-1e6, t, []byte{byte(i), 0, 0x80, 0x41, byte(i), 0, 0, 0})
		if i%5 == 0 {
			w.Add("cam", "", nil, t-2e6, t, media.AppendCompressedImage(nil, t, "cam", "jpeg", pic))
		}
		w.Add("raw", "x", nil, 0, t+1, []byte("r"))
	}
	w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "fuzz", TimeNs: 1e18 + 100e6, PreNs: 1e8, PostNs: 1e8}},
		Topics: []dumpinfo.TopicAccount{{Topic: "speed#", Messages: 20, Overwritten: 2}}, StartNs: 1e18, EndNs: 1e18 + 200e6})
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

var fuzzReportSchemas = func() map[string]schema.Type {
	return map[string]schema.Type{
		"speed": {MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: "s", Encoding: schema.SchemaLayout,
			Data: []byte("f32le v (m/s)\nu32le seq\n")}},
		"cam": {MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{Name: media.SchemaCompressedImage,
			Encoding: schema.SchemaProtobuf, Data: media.CompressedImageDescriptor()}},
	}
}()

// FuzzReportDump feeds hostile dump files (pack or MCAP) to the report, as
// "edr-lite report FILE" reads them, with a layout and a camera schema
// given: no panic; an error gives no report; a report renders as HTML and
// JSON; a damaged pack file's error is a *pack.CorruptError naming the
// file.
func FuzzReportDump(f *testing.F) {
	seed := reportSeed()
	f.Add(seed)
	f.Add(seed[:len(seed)*2/3])
	flipped := bytes.Clone(seed)
	flipped[len(flipped)/2] ^= 0x40
	f.Add(flipped)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.pack")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := report.FromDumps([]string{p}, report.DumpOptions{Options: report.Options{Schemas: fuzzReportSchemas, Thumbs: 3}, Verify: true})
		if err != nil {
			if r != nil {
				t.Fatal("error with a report")
			}
			var ce *pack.CorruptError
			if errors.As(err, &ce) && ce.Path == "" {
				t.Fatalf("a corruption error that does not name the file: %v", err)
			}
			return
		}
		if err := report.WriteHTML(io.Discard, r, report.HTMLOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzThumbnail feeds hostile pictures to the thumbnail maker: no panic,
// an error gives no thumbnail, a thumbnail is a JPEG at most the asked
// width, and nothing larger than MaxPicturePixels is decoded.
func FuzzThumbnail(f *testing.F) {
	f.Add("jpeg", tinyPicture("jpeg"))
	f.Add("png", tinyPicture("png"))
	f.Add("jpeg", tinyPicture("jpeg")[:40])
	f.Add("gif", []byte("GIF89a"))
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		th, w, h, err := report.Thumbnail(format, data, 32)
		if err != nil {
			if th != nil {
				t.Fatal("error with a thumbnail")
			}
			return
		}
		if int64(w)*int64(h) > report.MaxPicturePixels {
			t.Fatalf("decoded a %dx%d picture", w, h)
		}
		c, err := jpeg.DecodeConfig(bytes.NewReader(th))
		if err != nil || c.Width > 32 || c.Height > 32 {
			t.Fatalf("thumbnail %v %+v", err, c)
		}
	})
}
