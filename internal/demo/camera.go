package demo

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/media"
)

// The camera's frames: small JPEGs, so the demo stays light.
const (
	CameraWidth   = 320
	CameraHeight  = 240
	cameraQuality = 70
	// CameraFrameID is the frame_id of the camera's messages.
	CameraFrameID = "camera_front"
)

// cameraScratch is what drawing and encoding a frame reuse.
type cameraScratch struct {
	img *image.RGBA
	enc bytes.Buffer
}

var cameraPool = sync.Pool{New: func() any {
	return &cameraScratch{img: image.NewRGBA(image.Rect(0, 0, CameraWidth, CameraHeight))}
}}

// cameraFrame appends the camera's foxglove.CompressedImage at t (stamped
// tsNs) to dst: a road seen from the driver's seat whose lane marks
// scroll by with the distance driven, a car ahead that comes closer while
// braking, and a red bar at the bottom while the brake is applied.
func (v Vehicle) cameraFrame(dst []byte, tsNs int64, t time.Duration) []byte {
	sc := cameraPool.Get().(*cameraScratch)
	defer cameraPool.Put(sc)
	v.drawScene(sc.img, t)
	sc.enc.Reset()
	if err := jpeg.Encode(&sc.enc, sc.img, &jpeg.Options{Quality: cameraQuality}); err != nil {
		panic("BUG: jpeg.Encode into memory: " + err.Error())
	}
	return media.AppendCompressedImage(dst, tsNs, CameraFrameID, "jpeg", sc.enc.Bytes())
}

// drawScene paints the frame of t into img.
func (v Vehicle) drawScene(img *image.RGBA, t time.Duration) {
	w, h := CameraWidth, CameraHeight
	horizon := h * 2 / 5
	dist := v.Distance(t)
	// the car ahead: 40 m away while cruising, closing in as we brake
	gap := 40.0
	if t >= v.BrakeAt {
		gap = max(8, 40-2*(dist-v.Distance(v.BrakeAt)))
	}
	braking := v.Braking(t)
	for y := range h {
		for x := range w {
			var c color.RGBA
			if y < horizon { // sky, lighter towards the horizon
				k := uint8(120 * y / horizon)
				c = color.RGBA{90 + k/2, 140 + k/2, 220, 255}
			} else {
				// depth of this row: 1 at the horizon, large near the bottom
				z := float64(y-horizon+1) / float64(h-horizon)
				half := int(float64(w) * 0.45 * z) // half the road's width
				dx := x - w/2
				switch {
				case dx < -half || dx > half:
					c = color.RGBA{70, 120, 60, 255} // grass
				case dx > -3-int(2*z) && dx < 3+int(2*z) && int((dist+8/z)/3)%2 == 0:
					c = color.RGBA{235, 235, 220, 255} // lane mark, scrolling by
				default:
					c = color.RGBA{80, 80, 85, 255}
				}
			}
			img.SetRGBA(x, y, c)
		}
	}
	// the car ahead: a box whose size grows as the gap shrinks
	cw := int(600 / gap)
	ch := cw * 2 / 3
	cy := horizon + int(300/gap)
	fill(img, w/2-cw/2, cy-ch, w/2+cw/2, cy, color.RGBA{30, 40, 120, 255})
	if braking { // its brake lights and our brake bar
		fill(img, w/2-cw/2, cy-ch/3, w/2-cw/2+cw/5, cy-ch/6, color.RGBA{255, 30, 30, 255})
		fill(img, w/2+cw/2-cw/5, cy-ch/3, w/2+cw/2, cy-ch/6, color.RGBA{255, 30, 30, 255})
		fill(img, 0, h-12, w, h, color.RGBA{220, 20, 20, 255})
	}
	// a speedometer bar along the top: its length is the speed
	fill(img, 4, 4, 4+int(v.Speed(t)*float64(w-8)/40), 10, color.RGBA{255, 255, 255, 255})
}

// fill paints the rectangle [x0,x1)×[y0,y1) clipped to img.
func fill(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	r := image.Rect(x0, y0, x1, y1).Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}
