package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"sort"
	"time"

	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/schema"
)

// MaxPicturePixels bounds the pictures decoded for thumbnails (width ×
// height as the header says, checked before decoding): 40 Mpx, more than
// an 8K frame, about 60 MB decoded.
const MaxPicturePixels = 40 << 20

// Camera kinds: the well-known schemas of picture topics.
const (
	kindImage = media.SchemaCompressedImage // "foxglove.CompressedImage"
	kindVideo = media.SchemaCompressedVideo // "foxglove.CompressedVideo"
)

// cameraKind reports whether a type is a camera topic's.
func cameraKind(t schema.Type) string {
	if t.MessageEncoding != schema.EncodingProtobuf {
		return ""
	}
	switch t.Schema.Name {
	case kindImage, kindVideo:
		return t.Schema.Name
	}
	return ""
}

// Thumbnail slots: the camera strip shows every incident first, then
// what lies between.
const (
	slotNearest = iota // the frame nearest to the target (in its share of the axis)
	slotBefore         // the last frame at or before a trigger
	slotAfter          // the first frame after a trigger
)

// MaxTriggerThumbs bounds the triggers that get their own thumbnails (a
// dump of more triggers says so in a note).
const MaxTriggerThumbs = 32

// thumbSlot is one thumbnail of the strip: its target time, how a frame is
// chosen for it, and the trigger it shows (1-based, 0 for none).
type thumbSlot struct {
	target  int64
	kind    int
	trigger int
}

// thumbSlots lays out the strip. Every trigger on the axis gets the
// nearest frame before and after it (one frame, the nearest, when there
// are more than Thumbs/2 triggers); the other slots are spread over the
// triggers' windows (where the dumps hold data; not over the gaps of a
// merged dump), else over the axis with one at the focus.
func (a *Analyzer) thumbSlots() []thumbSlot {
	n := a.o.Thumbs
	type trig struct {
		at       int64
		from, to int64
		i        int
	}
	var ts []trig
	for i := range a.triggers {
		t := &a.triggers[i]
		if t.TimeNs < a.start || t.TimeNs > a.end {
			continue
		}
		from, to, _, _, ok := t.Window()
		if !ok {
			from, to = t.TimeNs, t.TimeNs
		}
		ts = append(ts, trig{t.TimeNs, max(from, a.start), min(to, a.end), i + 1})
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].at < ts[j].at })
	if len(ts) > MaxTriggerThumbs {
		a.notef("camera strip: the first %d of %d triggers have thumbnails (MaxTriggerThumbs)", MaxTriggerThumbs, len(ts))
		ts = ts[:MaxTriggerThumbs]
	}
	var out []thumbSlot
	if len(ts) == 0 {
		for _, t := range thumbTargets(a.start, a.end, a.focus(), n) {
			out = append(out, thumbSlot{target: t})
		}
		return out
	}
	for _, t := range ts {
		if 2*len(ts) <= n {
			out = append(out, thumbSlot{t.at, slotBefore, t.i}, thumbSlot{t.at, slotAfter, t.i})
		} else {
			out = append(out, thumbSlot{t.at, slotNearest, t.i})
		}
	}
	// the rest over the union of the windows, split at the triggers: each
	// in the middle of the longest stretch not yet shown
	var spans [][2]int64
	for _, t := range ts {
		if k := len(spans); k > 0 && t.from <= spans[k-1][1] {
			spans[k-1][1] = max(spans[k-1][1], t.to)
		} else {
			spans = append(spans, [2]int64{t.from, t.to})
		}
	}
	var segs [][2]int64
	for _, sp := range spans {
		from := sp[0]
		for _, t := range ts {
			if t.at > from && t.at < sp[1] {
				segs = append(segs, [2]int64{from, t.at})
				from = t.at
			}
		}
		segs = append(segs, [2]int64{from, sp[1]})
	}
	for rest := n - len(out); rest > 0 && len(segs) > 0; rest-- {
		k := 0
		for i, sg := range segs {
			if sg[1]-sg[0] > segs[k][1]-segs[k][0] {
				k = i
			}
		}
		sg := segs[k]
		if sg[1]-sg[0] <= 0 {
			break
		}
		mid := sg[0] + (sg[1]-sg[0])/2
		out = append(out, thumbSlot{target: mid})
		segs = append(segs[:k], append([][2]int64{{sg[0], mid}, {mid, sg[1]}}, segs[k+1:]...)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].target != out[j].target {
			return out[i].target < out[j].target
		}
		return out[i].kind < out[j].kind
	})
	return out
}

// camState keeps, for each thumbnail slot, the camera message that fits it
// best so far (the nearest to its target among the messages nearest to it,
// or the last before / the first after its trigger), copied, within
// MaxRetainedFrameBytes.
type camState struct {
	kind    string
	targets []int64 // of the slotNearest slots, in time order
	nearest []int   // their indexes in slots
	befores []int   // slotBefore slots, in time order
	afters  []int   // slotAfter slots, in time order
	spec    []thumbSlot
	slots   []camSlot
	img     media.CompressedImage
	vid     media.CompressedVideo
	seen    bool   // any message decoded
	bad     uint64 // messages that did not decode
	lastErr string
	noKey   uint64 // video frames skipped: not key frames
}

type camSlot struct {
	has    bool
	t      int64
	format string
	data   []byte
	why    string // when a frame could not be kept
}

func newCamState(kind string, slots []thumbSlot) *camState {
	c := &camState{kind: kind, spec: slots, slots: make([]camSlot, len(slots))}
	for i, s := range slots {
		switch s.kind {
		case slotBefore:
			c.befores = append(c.befores, i)
		case slotAfter:
			c.afters = append(c.afters, i)
		default:
			c.targets = append(c.targets, s.target)
			c.nearest = append(c.nearest, i)
		}
	}
	return c
}

// nearest returns the index of the target nearest to t.
func nearest(targets []int64, t int64) int {
	i := sort.Search(len(targets), func(i int) bool { return targets[i] >= t })
	switch {
	case i == 0:
		return 0
	case i == len(targets):
		return i - 1
	case targets[i]-t < t-targets[i-1]:
		return i
	}
	return i - 1
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

func (c *camState) message(a *Analyzer, ts *topicState, t int64, msg []byte) {
	var format string
	var data []byte
	if c.kind == kindVideo {
		if err := media.DecodeCompressedVideo(msg, &c.vid); err != nil {
			c.bad++
			c.lastErr = err.Error()
			return
		}
		format, data = c.vid.Format, c.vid.Data
		codec, err := media.ParseCodec(format)
		if err != nil {
			c.bad++
			c.lastErr = err.Error()
			return
		}
		if !media.KeyFrame(codec, data) {
			c.noKey++
			return
		}
	} else {
		if err := media.DecodeCompressedImage(msg, &c.img); err != nil {
			c.bad++
			c.lastErr = err.Error()
			return
		}
		format, data = c.img.Format, c.img.Data
	}
	c.seen = true
	if len(c.targets) > 0 {
		k := c.nearest[nearest(c.targets, t)]
		if s := &c.slots[k]; !s.has || absDiff(t, c.spec[k].target) < absDiff(s.t, c.spec[k].target) {
			c.keep(a, k, t, format, data)
		}
	}
	// the last frame at or before the next trigger
	if i := sort.Search(len(c.befores), func(i int) bool { return c.spec[c.befores[i]].target >= t }); i < len(c.befores) {
		if k := c.befores[i]; !c.slots[k].has || t >= c.slots[k].t {
			c.keep(a, k, t, format, data)
		}
	}
	// the first frame after the trigger before it
	if i := sort.Search(len(c.afters), func(i int) bool { return c.spec[c.afters[i]].target >= t }); i > 0 {
		if k := c.afters[i-1]; !c.slots[k].has || t < c.slots[k].t {
			c.keep(a, k, t, format, data)
		}
	}
}

// keep copies a frame into slot k.
func (c *camState) keep(a *Analyzer, k int, t int64, format string, data []byte) {
	s := &c.slots[k]
	if len(data) > MaxFrameBytes {
		s.why = fmt.Sprintf("frame of %d bytes at %s larger than %d bytes (MaxFrameBytes)", len(data), relTime(t, c.spec[k].target), MaxFrameBytes)
		return
	}
	grow := max(len(data)-cap(s.data), 0)
	if a.retained+grow > MaxRetainedFrameBytes {
		s.why = fmt.Sprintf("camera frames kept for thumbnails would exceed %d bytes (MaxRetainedFrameBytes)", MaxRetainedFrameBytes)
		return
	}
	a.retained += grow
	s.has, s.t, s.format, s.data, s.why = true, t, format, append(s.data[:0], data...), ""
}

func relTime(t, ref int64) string {
	d := time.Duration(t - ref)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// camera decodes the kept frames into thumbnails.
func (c *camState) camera(a *Analyzer, topic string) Camera {
	cam := Camera{Topic: topic, Format: c.kind, Frames: []Frame{}}
	if c.bad > 0 {
		a.notef("%s: %d messages are not %s (%s)", topic, c.bad, c.kind, c.lastErr)
	}
	shown := map[int64]bool{} // the frames of the triggers' slots
	for k, s := range c.slots {
		if s.has && c.spec[k].kind != slotNearest {
			shown[s.t] = true
		}
	}
	for k, s := range c.slots {
		sp := c.spec[k]
		if sp.kind == slotNearest && s.has && shown[s.t] {
			c.slots[k].data = nil
			continue // the same frame as a trigger's: shown once
		}
		f := Frame{TargetNs: sp.target, Trigger: sp.trigger, Side: [...]string{"", "before", "after"}[sp.kind]}
		none := "no frame nearer to this time than to the others"
		switch sp.kind {
		case slotBefore:
			none = "no frame at or before this trigger (after the one before it)"
		case slotAfter:
			none = "no frame after this trigger (before the next one)"
		}
		switch {
		case !s.has && s.why != "":
			f.Missing = s.why
		case !s.has && c.kind == kindVideo && c.noKey > 0:
			f.Missing = none + " that is a key frame (only key frames can be decoded alone)"
		case !s.has:
			f.Missing = none
		default:
			f.TimeNs, f.Format = s.t, s.format
			var err error
			if c.kind == kindVideo {
				f.Thumb, f.Width, f.Height, err = videoThumb(a.o.VideoDecoder, s.format, s.data, a.o.ThumbWidth)
			} else {
				f.Thumb, f.Width, f.Height, err = imageThumb(s.format, s.data, a.o.ThumbWidth)
			}
			if err != nil {
				f.Missing = err.Error()
				f.Thumb = nil
			}
			f.ThumbBytes = len(f.Thumb)
		}
		cam.Frames = append(cam.Frames, f)
		c.slots[k].data = nil
	}
	return cam
}

// decodePicture decodes a JPEG or PNG after checking its header's size.
func decodePicture(format string, data []byte) (image.Image, error) {
	var cfg func([]byte) (image.Config, error)
	var dec func([]byte) (image.Image, error)
	switch format {
	case "jpeg", "jpg", "image/jpeg":
		cfg = func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) }
		dec = func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }
	case "png", "image/png":
		cfg = func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) }
		dec = func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
	default:
		return nil, fmt.Errorf("%w: format %q is not decoded here (jpeg and png are)", ErrNoImage, format)
	}
	c, err := cfg(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s header: %v", ErrNoImage, format, err)
	}
	if c.Width <= 0 || c.Height <= 0 || int64(c.Width)*int64(c.Height) > MaxPicturePixels {
		return nil, fmt.Errorf("%w: %dx%d picture (more than %d pixels, MaxPicturePixels)", ErrNoImage, c.Width, c.Height, MaxPicturePixels)
	}
	img, err := dec(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoImage, format, err)
	}
	return img, nil
}

// Thumbnail decodes a picture (format "jpeg" or "png", as a
// foxglove.CompressedImage names it) and returns a JPEG thumbnail at most
// width pixels wide and high, with the picture's size. The header is
// checked first: a picture of more than MaxPicturePixels is refused before
// anything is decoded. On error the thumbnail is nil.
func Thumbnail(format string, data []byte, width int) ([]byte, int, int, error) {
	return imageThumb(format, data, max(width, 1))
}

// imageThumb decodes a picture and returns a JPEG thumbnail width pixels
// wide (at most as high), with the picture's size.
func imageThumb(format string, data []byte, width int) ([]byte, int, int, error) {
	img, err := decodePicture(format, data)
	if err != nil {
		return nil, 0, 0, err
	}
	b := img.Bounds()
	th := Downscale(img, width, width)
	var out bytes.Buffer
	if err := jpeg.Encode(&out, th, &jpeg.Options{Quality: 80}); err != nil {
		return nil, 0, 0, err
	}
	return out.Bytes(), b.Dx(), b.Dy(), nil
}

// Downscale returns img shrunk to fit maxW × maxH (aspect kept; never
// enlarged), each output pixel the average of the source pixels it covers
// (a box filter, weighted by coverage at the edges).
func Downscale(img image.Image, maxW, maxH int) *image.RGBA {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dw, dh := sw, sh
	if dw > maxW {
		dw, dh = maxW, max(sh*maxW/sw, 1)
	}
	if dh > maxH {
		dw, dh = max(dw*maxH/dh, 1), maxH
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	if sw == 0 || sh == 0 {
		return dst
	}
	px := rgbaReader(img)
	// accumulate each source row into per-column sums, weighting by the
	// fraction of the source pixel that falls in the destination pixel
	fx := float64(sw) / float64(dw)
	fy := float64(sh) / float64(dh)
	acc := make([][4]float64, dw)
	wts := make([]float64, dw)
	row := make([][4]float64, sw)
	for dy := 0; dy < dh; dy++ {
		clear(acc)
		clear(wts)
		y0, y1 := float64(dy)*fy, float64(dy+1)*fy
		for sy := int(y0); sy < sh && float64(sy) < y1; sy++ {
			wy := min(float64(sy+1), y1) - max(float64(sy), y0)
			if wy <= 0 {
				continue
			}
			for sx := 0; sx < sw; sx++ {
				r, g, bb, a := px(b.Min.X+sx, b.Min.Y+sy)
				row[sx] = [4]float64{float64(r), float64(g), float64(bb), float64(a)}
			}
			for dx := 0; dx < dw; dx++ {
				x0, x1 := float64(dx)*fx, float64(dx+1)*fx
				for sx := int(x0); sx < sw && float64(sx) < x1; sx++ {
					w := (min(float64(sx+1), x1) - max(float64(sx), x0)) * wy
					if w <= 0 {
						continue
					}
					p := &row[sx]
					a := &acc[dx]
					a[0] += p[0] * w
					a[1] += p[1] * w
					a[2] += p[2] * w
					a[3] += p[3] * w
					wts[dx] += w
				}
			}
		}
		for dx := 0; dx < dw; dx++ {
			if wts[dx] == 0 {
				continue
			}
			a := acc[dx]
			i := dst.PixOffset(dx, dy)
			w := wts[dx]
			dst.Pix[i+0] = uint8(a[0]/w + 0.5)
			dst.Pix[i+1] = uint8(a[1]/w + 0.5)
			dst.Pix[i+2] = uint8(a[2]/w + 0.5)
			dst.Pix[i+3] = uint8(a[3]/w + 0.5)
		}
	}
	return dst
}

// rgbaReader returns a function reading 8-bit RGBA at (x, y), with fast
// paths for the types the standard decoders return.
func rgbaReader(img image.Image) func(x, y int) (r, g, b, a uint8) {
	switch m := img.(type) {
	case *image.YCbCr:
		return func(x, y int) (uint8, uint8, uint8, uint8) {
			yi, ci := m.YOffset(x, y), m.COffset(x, y)
			r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			return r, g, b, 255
		}
	case *image.Gray:
		return func(x, y int) (uint8, uint8, uint8, uint8) {
			v := m.Pix[m.PixOffset(x, y)]
			return v, v, v, 255
		}
	case *image.RGBA:
		return func(x, y int) (uint8, uint8, uint8, uint8) {
			i := m.PixOffset(x, y)
			return m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3]
		}
	}
	return func(x, y int) (uint8, uint8, uint8, uint8) {
		r, g, b, a := img.At(x, y).RGBA()
		return uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)
	}
}
