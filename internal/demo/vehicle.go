package demo

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/media"
)

// Publisher receives one topic's messages.
type Publisher interface {
	Publish(genNs int64, payload []byte) error
}

// Topic is one simulated stream.
type Topic struct {
	Name string
	// Type is what the producer declares: packed structs (a layout),
	// foxglove.CompressedImage protobuf, JSON with a JSON Schema.
	Type    ingest.Type
	Hz      float64 // 0 for a latched topic published once at start
	Size    int     // payload size in bytes; the camera's is an upper bound
	Latched bool
}

// Topic names of the simulated vehicle.
const (
	TopicSpeed       = "vehicle/speed"
	TopicBrake       = "vehicle/brake_pedal"
	TopicIMU         = "vehicle/imu"
	TopicCamera      = "camera/front"
	TopicCalibration = "vehicle/calibration"
)

// The layouts of the packed topics (docs/schemas.md, the layout language).
// The speed stays a f32le at offset 0: the shipped hard_brake rule reads
// it there.
const (
	SpeedLayout = "# edr.demo.Speed, 100 Hz\nf32le speed (m/s)\nu32le seq\n"
	BrakeLayout = "# edr.demo.BrakePedal, 50 Hz: 0 released .. 1 floored\nf32le pedal\n"
	IMULayout   = "# edr.demo.IMU, 200 Hz\nf32le accel[3] (m/s^2)\nf32le gyro[3] (rad/s)\n"
)

// CalibrationSchema is the JSON Schema of the calibration message.
const CalibrationSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"edr.demo.Calibration","type":"object",` +
	`"properties":{"vehicle":{"type":"string"},"wheelbase_m":{"type":"number","description":"unit: m"},` +
	`"camera_front":{"type":"object","properties":{"fx":{"type":"number"},"fy":{"type":"number"},"cx":{"type":"number"},"cy":{"type":"number"}}},` +
	`"imu_to_base":{"type":"array","items":{"type":"number"},"minItems":3,"maxItems":3,"description":"unit: m"}},` +
	`"required":["vehicle","wheelbase_m","camera_front","imu_to_base"]}`

// Topics lists the simulated streams.
var Topics = []Topic{
	{Name: TopicSpeed, Type: ingest.Packed("edr.demo.Speed", SpeedLayout), Hz: 100, Size: 8},
	{Name: TopicBrake, Type: ingest.Packed("edr.demo.BrakePedal", BrakeLayout), Hz: 50, Size: 4},
	{Name: TopicIMU, Type: ingest.Packed("edr.demo.IMU", IMULayout), Hz: 200, Size: 24},
	{Name: TopicCamera, Type: ingest.Type{MessageEncoding: ingest.EncodingProtobuf, Schema: ingest.Schema{
		Name: media.SchemaCompressedImage, Encoding: ingest.SchemaProtobuf, Data: media.CompressedImageDescriptor()}},
		Hz: 30, Size: 128 << 10},
	{Name: TopicCalibration, Type: ingest.Type{MessageEncoding: ingest.EncodingJSON, Schema: ingest.Schema{
		Name: "edr.demo.Calibration", Encoding: ingest.SchemaJSON, Data: []byte(CalibrationSchema)}}, Latched: true},
}

// Vehicle is the simulation's script: it cruises, then brakes hard.
type Vehicle struct {
	Cruise  float64       // cruise speed, m/s
	BrakeAt time.Duration // when the hard brake starts
	Decel   float64       // m/s² during the brake
}

// DefaultVehicle cruises at 20 m/s and brakes at 9 m/s² three seconds in.
func DefaultVehicle() Vehicle { return Vehicle{Cruise: 20, BrakeAt: 3 * time.Second, Decel: 9} }

// Speed returns the speed in m/s at t since the start.
func (v Vehicle) Speed(t time.Duration) float64 {
	if t < v.BrakeAt {
		// steady cruise: capture times jitter, so any slope here could
		// read as a hard brake to a rule differentiating over tiny gaps
		return v.Cruise
	}
	s := v.Cruise - v.Decel*(t-v.BrakeAt).Seconds()
	if s < 0 {
		return 0
	}
	return s
}

// Braking reports whether the brake is applied at t.
func (v Vehicle) Braking(t time.Duration) bool {
	return t >= v.BrakeAt && v.Speed(t) > 0
}

// Calibration is the latched calibration message.
func Calibration() []byte {
	return []byte(`{"vehicle":"demo-1","wheelbase_m":2.7,"camera_front":{"fx":410.2,"fy":410.9,"cx":256,"cy":200},"imu_to_base":[0,0,0.35]}`)
}

// Distance returns how far the vehicle has driven at t since the start, in
// metres.
func (v Vehicle) Distance(t time.Duration) float64 {
	if t < v.BrakeAt {
		return v.Cruise * t.Seconds()
	}
	d := v.Cruise * v.BrakeAt.Seconds()
	dt := (t - v.BrakeAt).Seconds()
	if v.Decel > 0 {
		dt = min(dt, v.Cruise/v.Decel) // stopped
	}
	return d + v.Cruise*dt - v.Decel*dt*dt/2
}

// Payload fills buf (grown as needed) with the message of topic at t, the
// n-th message of that topic, and returns it. The camera's timestamp is t
// itself (PayloadAt stamps it with a start time).
func (v Vehicle) Payload(buf []byte, topic Topic, t time.Duration, n uint64) []byte {
	return v.PayloadAt(buf, topic, 0, t, n)
}

// PayloadAt is Payload for a run that started at startNs (ns since the
// epoch): the camera frame's timestamp is startNs + t.
func (v Vehicle) PayloadAt(buf []byte, topic Topic, startNs int64, t time.Duration, n uint64) []byte {
	if topic.Latched {
		return append(buf[:0], Calibration()...)
	}
	if topic.Name == TopicCamera {
		return v.cameraFrame(buf[:0], startNs+int64(t), t)
	}
	if topic.Name == TopicCAN { // a candump log line
		f := v.CANFrame(t, n)
		return can.AppendCandump(buf[:0], startNs+int64(t), CANBus, &f)
	}
	if cap(buf) < topic.Size {
		buf = make([]byte, topic.Size)
	}
	buf = buf[:topic.Size]
	le := binary.LittleEndian
	switch topic.Name {
	case TopicSpeed:
		le.PutUint32(buf[0:], math.Float32bits(float32(v.Speed(t))))
		le.PutUint32(buf[4:], uint32(n))
	case TopicBrake:
		p := float32(0)
		if v.Braking(t) {
			p = 0.85
		}
		le.PutUint32(buf[0:], math.Float32bits(p))
	case TopicIMU: // accel[3], gyro[3]
		ax := float32(0.1 * math.Sin(float64(n)))
		if v.Braking(t) {
			ax = float32(-v.Decel)
		}
		vals := [6]float32{ax, 0.05, 9.81, 0, 0, 0.01}
		for i, x := range vals {
			le.PutUint32(buf[4*i:], math.Float32bits(x))
		}
	default:
		for i := range buf {
			buf[i] = byte(n)
		}
	}
	return buf
}

// Run publishes every topic in real time for duration, starting now (each
// message due before duration, however late the loop runs), using
// the publisher for each topic name (topics without one are skipped;
// CANTopic too, which is not in Topics). The
// latched calibration is published once at the start. genNs is the
// simulation's own clock (wall time at publish).
func (v Vehicle) Run(ctx context.Context, duration time.Duration, pubs map[string]Publisher) error {
	start := time.Now()
	type sched struct {
		topic Topic
		pub   Publisher
		next  time.Duration
		n     uint64
		buf   []byte
	}
	var ss []*sched
	for _, tp := range append(Topics[:len(Topics):len(Topics)], CANTopic) {
		p, ok := pubs[tp.Name]
		if !ok {
			continue
		}
		ss = append(ss, &sched{topic: tp, pub: p})
	}
	for {
		// Past the end, what was due before it is still published (a slow
		// camera frame must not cost the other topics their last
		// messages), then Run returns.
		now := time.Since(start)
		end := now >= duration
		if end {
			now = duration - 1
		}
		next := duration
		for _, s := range ss {
			if s.topic.Latched {
				if s.n == 0 {
					s.buf = v.Payload(s.buf, s.topic, now, 0)
					if err := s.pub.Publish(time.Now().UnixNano(), s.buf); err != nil {
						return fmt.Errorf("demo: publish %s: %w", s.topic.Name, err)
					}
					s.n++
				}
				continue
			}
			period := time.Duration(float64(time.Second) / s.topic.Hz)
			for s.next <= now {
				s.buf = v.PayloadAt(s.buf, s.topic, start.UnixNano(), s.next, s.n)
				if err := s.pub.Publish(start.Add(s.next).UnixNano(), s.buf); err != nil {
					return fmt.Errorf("demo: publish %s: %w", s.topic.Name, err)
				}
				s.n++
				s.next += period
			}
			if s.next < next {
				next = s.next
			}
		}
		if end {
			return nil
		}
		wait := next - time.Since(start)
		if wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
