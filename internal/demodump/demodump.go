package demodump

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math"
	"os"
	"os/exec"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// T0 is the demo dump's start: 2026-12-02T13:32:19Z.
const T0 = int64(1796218339) * 1e9

// The demo dump's shape.
const (
	Duration   = 5 * time.Second
	TriggerAt  = T0 + int64(3*time.Second) // the hard brake
	Pre        = 3 * time.Second
	Post       = 2 * time.Second
	CameraW    = 320
	CameraH    = 200
	CameraHz   = 30
	CameraGap0 = 60 // camera frames 60, 61, 62 are lost at the source
	CameraGapN = 3
)

// Topic names of the demo dump.
const (
	Speed       = "vehicle/speed"
	Brake       = "vehicle/brake_pedal"
	IMU         = "vehicle/imu"
	Camera      = "camera/front"
	Calibration = "vehicle/calibration"
)

// Layouts are the packed topics' layouts (docs/schemas.md).
var Layouts = map[string]string{
	Speed: "# edr.demo.Speed\nf32le speed (m/s)\nu32le seq\n",
	Brake: "# edr.demo.BrakePedal\nf32le pedal\n",
	IMU:   "# edr.demo.IMU\nf32le ax (m/s^2); f32le ay (m/s^2); f32le az (m/s^2)\nf32le gx (rad/s); f32le gy (rad/s); f32le gz (rad/s)\n",
}

// typeNames are the type names the demo records.
var typeNames = map[string]string{Speed: "edr.demo.Speed", Brake: "edr.demo.BrakePedal", IMU: "edr.demo.IMU",
	Camera: media.SchemaCompressedImage, Calibration: "application/json"}

// Counts are the messages per topic of the demo dump.
var Counts = map[string]int{Speed: 500, Brake: 250, IMU: 1000, Camera: 150 - CameraGapN, Calibration: 1}

// Type returns the schema type of a demo topic.
func Type(topic string) schema.Type {
	switch topic {
	case Camera:
		return schema.Type{MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{Name: media.SchemaCompressedImage,
			Encoding: schema.SchemaProtobuf, Data: media.CompressedImageDescriptor()}}
	case Calibration:
		return schema.Type{MessageEncoding: schema.EncodingJSON}
	}
	return schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: typeNames[topic],
		Encoding: schema.SchemaLayout, Data: []byte(Layouts[topic])}}
}

// SpeedAt is the demo speed at t ns after T0: 20 m/s, then braking at
// 9 m/s² from the trigger.
func SpeedAt(t int64) float64 {
	if t < TriggerAt-T0 {
		return 20
	}
	return math.Max(0, 20-9*float64(t-(TriggerAt-T0))/1e9)
}

// message is one message of the demo dump.
type message struct {
	topic    string
	cap, gen int64
	data     []byte
}

// messages returns the demo dump's messages in capture-time order.
func messages() ([]message, error) {
	var out []message
	le := binary.LittleEndian
	f32 := func(b []byte, v float64) []byte { return le.AppendUint32(b, math.Float32bits(float32(v))) }
	latency := func(i int) int64 { return int64(1500+(i*7919)%1000) * 1000 } // 1.5 .. 2.5 ms
	out = append(out, message{Calibration, T0, T0 - 5e6,
		[]byte(`{"vehicle":"demo-1","wheelbase_m":2.7,"camera_front":{"fx":410.2,"fy":410.9,"cx":160,"cy":100}}`)})
	for i := 0; i < 500; i++ {
		t := int64(i) * 10e6
		b := f32(nil, SpeedAt(t))
		b = le.AppendUint32(b, uint32(i))
		out = append(out, message{Speed, T0 + t, T0 + t - latency(i), b})
	}
	for i := 0; i < 250; i++ {
		t := int64(i) * 20e6
		p := 0.0
		if t >= TriggerAt-T0 && SpeedAt(t) > 0 {
			p = 0.85
		}
		out = append(out, message{Brake, T0 + t, T0 + t - latency(i), f32(nil, p)})
	}
	for i := 0; i < 1000; i++ {
		t := int64(i) * 5e6
		ax := 0.1 * math.Sin(float64(i)/7)
		if t >= TriggerAt-T0 && SpeedAt(t) > 0 {
			ax = -9 + 0.2*math.Sin(float64(i))
		}
		var b []byte
		for _, v := range []float64{ax, 0.05 * math.Cos(float64(i)/11), 9.81, 0, 0, 0.01} {
			b = f32(b, v)
		}
		out = append(out, message{IMU, T0 + t, T0 + t - latency(i), b})
	}
	for i := 0; i < 150; i++ {
		if i >= CameraGap0 && i < CameraGap0+CameraGapN {
			continue
		}
		t := int64(i) * int64(time.Second) / CameraHz
		img, err := Frame(i)
		if err != nil {
			return nil, err
		}
		out = append(out, message{Camera, T0 + t, T0 + t - 8e6, media.AppendCompressedImage(nil, T0+t-8e6, "camera_front", "jpeg", img)})
	}
	sortMessages(out)
	return out, nil
}

func sortMessages(ms []message) {
	// stable by capture time: topics keep their order at equal times
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].cap < ms[j-1].cap; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// Frame returns camera frame i as a JPEG: a road-coloured gradient with a
// bright bar that moves with the frame number (and turns red once the
// brake is on).
func Frame(i int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, CameraW, CameraH))
	braking := int64(i)*int64(time.Second)/CameraHz >= TriggerAt-T0
	bar := (i * 7) % CameraW
	for y := 0; y < CameraH; y++ {
		for x := 0; x < CameraW; x++ {
			c := color.RGBA{uint8(40 + y/2), uint8(60 + y/3), uint8(90 + x/4), 255}
			if y > CameraH/2 {
				c = color.RGBA{uint8(70 + x/8), uint8(70 + x/8), uint8(75 + x/8), 255}
			}
			if x >= bar && x < bar+24 {
				c = color.RGBA{240, 240, 200, 255}
				if braking {
					c = color.RGBA{230, 30, 30, 255}
				}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 75}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Info returns the demo dump's information: the trigger, the window and
// each topic's accounting (the camera lost CameraGapN frames at the
// source).
func Info(ms []message) dumpinfo.Info {
	d := dumpinfo.Info{
		// as the recorder records the demo's trigger: the topics' own
		// windows (no override), the window it selected
		Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake", Source: dumpinfo.SourceLua, Rule: "hard_brake",
			Tag: "9.0 m/s^2 from 20.0 to 19.9 m/s", Severity: 2, TimeNs: TriggerAt, FromNs: TriggerAt - int64(Pre), ToNs: TriggerAt + int64(Post),
			Params: map[string]string{"decel": "6", "topic": Speed}}},
		Writer: "edr-lite demodump", StartNs: TriggerAt - int64(Pre), EndNs: TriggerAt + int64(Post), CreatedNs: T0 + 6e9,
	}
	for _, name := range []string{Speed, Brake, IMU, Camera, Calibration} {
		a := dumpinfo.TopicAccount{Topic: name + "#", Type: typeNames[name]}
		for _, m := range ms {
			if m.topic != name {
				continue
			}
			if a.Messages == 0 {
				a.FirstNs = m.cap
			}
			a.LastNs = m.cap
			a.Messages++
			a.Bytes += uint64(len(m.data))
		}
		if name == Camera {
			a.LostAtSource = CameraGapN
		}
		if name != Calibration { // the window asked for the topic (latched calibration: none)
			a.WindowFromNs, a.WindowToNs = TriggerAt-int64(Pre), TriggerAt+int64(Post)
		}
		d.Topics = append(d.Topics, a)
	}
	return d
}

// WritePack writes the demo dump as a pack file.
func WritePack(path string) error { return WritePackShifted(path, 0) }

// WritePackShifted writes the demo dump as a pack file with every time
// (messages, trigger, windows) shift later: demo dumps of incidents at
// other times, to be merged with gaps between them.
func WritePackShifted(path string, shift time.Duration) error {
	ms, err := messages()
	if err != nil {
		return err
	}
	d := Info(ms)
	if sh := int64(shift); sh != 0 {
		for i := range ms {
			ms[i].cap += sh
			ms[i].gen += sh
		}
		d = Info(ms)
		for i := range d.Triggers {
			t := &d.Triggers[i]
			t.TimeNs, t.FromNs, t.ToNs = t.TimeNs+sh, t.FromNs+sh, t.ToNs+sh
		}
		d.StartNs, d.EndNs, d.CreatedNs = d.StartNs+sh, d.EndNs+sh, d.CreatedNs+sh
		for i := range d.Topics {
			if a := &d.Topics[i]; a.WindowToNs != 0 {
				a.WindowFromNs, a.WindowToNs = a.WindowFromNs+sh, a.WindowToNs+sh
			}
		}
	}
	w, err := pack.Create(path, pack.WriterOptions{Writer: "edr-lite demodump", CreatedNs: T0 + 6e9, TargetFrameSize: 256 << 10, TargetFrameSpan: -1}) // frames by size only: the golden files know them
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := w.Add(m.topic, "", nil, m.gen, m.cap, m.data); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.SetDumpInfo(d); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// WriteMCAP writes the demo dump as an MCAP file whose channels carry each
// topic's message encoding and schema (packed layouts, the
// foxglove.CompressedImage descriptor, JSON), with the dump information
// as edr.dump_info metadata.
func WriteMCAP(path string) error {
	ms, err := messages()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := mcap.NewWriter(f, mcap.Options{Library: "edr-lite demodump"})
	if err != nil {
		return err
	}
	chans := map[string]uint16{}
	for _, name := range []string{Speed, Brake, IMU, Camera, Calibration} {
		t := Type(name)
		var sid uint16
		if t.Schema.Encoding != "" {
			if sid, err = w.AddSchema(t.Schema.Name, t.Schema.Encoding, t.Schema.Data); err != nil {
				return err
			}
		}
		if chans[name], err = w.AddChannel(sid, name, t.MessageEncoding, nil); err != nil {
			return err
		}
	}
	for i, m := range ms {
		if err := w.WriteMessage(&mcap.Message{ChannelID: chans[m.topic], Sequence: uint32(i), LogTime: uint64(m.cap),
			PublishTime: uint64(m.gen), Data: m.data}); err != nil {
			return err
		}
	}
	js, err := json.Marshal(Info(ms))
	if err != nil {
		return err
	}
	if err := w.AddMetadata(mcap.MetadataDump, map[string]string{"json": string(js)}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

// WriteLayouts writes each packed topic's layout to dir/<topic base>.layout
// and returns the --schema arguments naming them, plus the camera's.
func WriteLayouts(dir string) ([]string, error) {
	var args []string
	for _, name := range []string{Speed, Brake, IMU} {
		p := fmt.Sprintf("%s/%s.layout", dir, name[len("vehicle/"):])
		if err := os.WriteFile(p, []byte(Layouts[name]), 0o644); err != nil {
			return nil, err
		}
		args = append(args, name+"="+p)
	}
	return append(args, Camera+"="+media.SchemaCompressedImage), nil
}

// LargeLayout is the layout of every topic of a large dump: a value with a
// unit and a sequence number.
const LargeLayout = "f32le value (V)\nu32le seq\n"

// LargeTopic names topic i of a large dump.
func LargeTopic(i int) string { return fmt.Sprintf("bus/signal_%02d", i) }

// WriteLarge writes a pack dump of topics topics at hz messages per second
// each for d, starting at T0, every message an 8-byte LargeLayout struct
// (a sine per topic, with a one-sample spike every 10 s), captured 1 ms
// after it was produced, plus one trigger in the middle (pre and post of
// half the duration).
func WriteLarge(path string, topics, hz int, d time.Duration) error {
	w, err := pack.Create(path, pack.WriterOptions{Writer: "edr-lite demodump", CreatedNs: T0})
	if err != nil {
		return err
	}
	names := make([]string, topics)
	for i := range names {
		names[i] = LargeTopic(i)
	}
	period := int64(time.Second) / int64(hz)
	n := int(int64(d) / period)
	buf := make([]byte, 8)
	le := binary.LittleEndian
	for k := 0; k < n; k++ {
		t := T0 + int64(k)*period
		for i, name := range names {
			v := math.Sin(float64(k)/float64(hz)*(1+float64(i)/10)) * float64(i+1)
			if k%(10*hz) == 5*hz {
				v = 10 * float64(i+1) // a spike the plots must keep
			}
			le.PutUint32(buf, math.Float32bits(float32(v)))
			le.PutUint32(buf[4:], uint32(k))
			if err := w.Add(name, "", nil, t-1e6, t+int64(i), buf); err != nil {
				w.Close()
				return err
			}
		}
	}
	info := dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "bench", Source: dumpinfo.SourceAPI,
		TimeNs: T0 + int64(d)/2, PreNs: int64(d) / 2, PostNs: int64(d) / 2}}, StartNs: T0, EndNs: T0 + int64(d)}
	if err := w.SetDumpInfo(info); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// VideoTopic is the camera topic of WriteVideo's dump.
const VideoTopic = "camera/video"

// WriteVideo makes a 2 s H.264 clip with ffmpeg (320×240, 30 fps, B-frames,
// a key frame every 15 frames) and writes its samples, in decode order a
// frame interval apart, as foxglove.CompressedVideo messages of
// VideoTopic to a pack dump at path, with a trigger at 1 s. It needs
// ffmpeg with libx264 (the error says so).
func WriteVideo(path string) error {
	mp4 := path + ".mp4"
	defer os.Remove(mp4)
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
		"-t", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-bf", "2", "-g", "15", mp4).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: ffmpeg cannot make an H.264 clip: %v %s", ErrNoFFmpeg, err, out)
	}
	m, err := media.OpenMP4(mp4, media.MP4Options{StartNs: T0})
	if err != nil {
		return err
	}
	defer m.Close()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "edr-lite demodump", CreatedNs: T0})
	if err != nil {
		return err
	}
	var s media.Sample
	for n := 0; ; n++ {
		if err := m.Next(&s); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			w.Close()
			return err
		}
		capNs := T0 + int64(n)*int64(time.Second)/30
		if err := w.Add(VideoTopic, "", nil, s.PTSNs, capNs, media.AppendCompressedVideo(nil, s.PTSNs, "cam", "h264", s.Data)); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "video", Source: dumpinfo.SourceAPI,
		TimeNs: T0 + 1e9, PreNs: 1e9, PostNs: 1e9}}, StartNs: T0, EndNs: T0 + 2e9}); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ErrNoFFmpeg: WriteVideo could not run ffmpeg (tests skip on it).
var ErrNoFFmpeg = errors.New("demodump: no ffmpeg")
