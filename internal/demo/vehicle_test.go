package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/jpeg"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/schema"
)

type countPub struct {
	mu   sync.Mutex
	n    int
	last []byte
}

func (c *countPub) Publish(gen int64, p []byte) error {
	c.mu.Lock()
	c.n++
	c.last = append(c.last[:0], p...)
	c.mu.Unlock()
	return nil
}

func TestSpeedProfileBrakesHard(t *testing.T) {
	v := DefaultVehicle()
	before, after := v.Speed(v.BrakeAt-10*time.Millisecond), v.Speed(v.BrakeAt+time.Second)
	if d := before - after; d < 8 || d > 10 {
		t.Fatalf("speed drop over 1s of braking = %.2f m/s, want ~9", d)
	}
	if v.Speed(v.BrakeAt+time.Minute) != 0 {
		t.Fatal("vehicle must come to a stop")
	}
	p := v.Payload(nil, Topics[0], v.BrakeAt+time.Second, 7)
	if got := math.Float32frombits(binary.LittleEndian.Uint32(p)); math.Abs(float64(got)-after) > 1e-3 {
		t.Fatalf("speed payload %v, want %v", got, after)
	}
}

func TestRunPublishesAtRates(t *testing.T) {
	v := DefaultVehicle()
	pubs := map[string]Publisher{}
	cs := map[string]*countPub{}
	for _, tp := range Topics {
		c := &countPub{}
		cs[tp.Name], pubs[tp.Name] = c, c
	}
	if err := v.Run(context.Background(), 300*time.Millisecond, pubs); err != nil {
		t.Fatal(err)
	}
	// every message due in the 300 ms, however slow the machine
	for _, tp := range Topics {
		want := 1
		if !tp.Latched {
			period := time.Duration(float64(time.Second) / tp.Hz)
			want = int((300*time.Millisecond-1)/period) + 1
		}
		if cs[tp.Name].n != want {
			t.Errorf("%s: %d messages in 300ms, want %d", tp.Name, cs[tp.Name].n, want)
		}
	}
	if cs[TopicCalibration].n != 1 {
		t.Errorf("calibration published %d times, want once", cs[TopicCalibration].n)
	}
	if n := len(cs[TopicCamera].last); n < 1000 || n > Topics[3].Size {
		t.Errorf("camera frame %d bytes", n)
	}
}

// TestTypedTopics: every topic's declared type passes the recorder's
// check, and its messages decode with it: the packed structs by their
// layouts (speed at offset 0, what hard_brake reads), the calibration as
// JSON, the camera as a foxglove.CompressedImage whose JPEG decodes to a
// CameraWidth × CameraHeight image that changes over time.
func TestTypedTopics(t *testing.T) {
	v := DefaultVehicle()
	for _, tp := range Topics {
		if err := schema.Check(tp.Type); err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		dec, err := schema.NewDecoder(tp.Type)
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		msg := v.PayloadAt(nil, tp, 1_800_000_000e9, v.BrakeAt+time.Second, 7)
		js, err := dec.AppendJSON(nil, msg)
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		if tp.Name == TopicSpeed {
			var s struct{ Speed float64 }
			json.Unmarshal(js, &s)
			if math.Abs(s.Speed-v.Speed(v.BrakeAt+time.Second)) > 1e-3 {
				t.Errorf("speed decodes as %s", js)
			}
		}
	}
	var frames [2]image.Image
	for i, at := range []time.Duration{time.Second, v.BrakeAt + time.Second} {
		msg := v.PayloadAt(nil, Topics[3], 1_800_000_000e9, at, 0)
		var ci media.CompressedImage
		if err := media.DecodeCompressedImage(msg, &ci); err != nil {
			t.Fatal(err)
		}
		if ci.Format != "jpeg" || ci.FrameID != CameraFrameID || ci.TimestampNs != 1_800_000_000e9+int64(at) {
			t.Errorf("frame at %v: %+v", at, ci)
		}
		img, err := jpeg.Decode(bytes.NewReader(ci.Data))
		if err != nil {
			t.Fatalf("frame at %v: %v", at, err)
		}
		if b := img.Bounds(); b.Dx() != CameraWidth || b.Dy() != CameraHeight {
			t.Errorf("frame at %v: %v", at, b)
		}
		frames[i] = img
	}
	// braking: the red bar at the bottom
	r, g, _, _ := frames[1].At(CameraWidth/2, CameraHeight-4).RGBA()
	r0, _, _, _ := frames[0].At(CameraWidth/2, CameraHeight-4).RGBA()
	if r>>8 < 180 || g>>8 > 80 || r0>>8 > 150 {
		t.Errorf("brake bar: cruising red %d, braking red %d green %d", r0>>8, r>>8, g>>8)
	}
}
