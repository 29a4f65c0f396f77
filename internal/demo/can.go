package demo

import (
	_ "embed"
	"encoding/binary"
	"math"
	"time"

	"github.com/edr-lite/edr-lite/can"
)

// The simulated vehicle's CAN bus ("edr-lite demo --can"): frames of the
// shipped DBC (VehicleDBC: wheel speeds, brake pressure, gear, steering)
// written as candump log lines, one message of the four in turn at
// CANTopic.Hz, so each at a quarter of it.

// VehicleDBC is the demo's DBC file.
//
//go:embed vehicle.dbc
var VehicleDBC string

// CANBus is the name of the demo's bus; its frames are can/can0, its
// decoded messages can/can0/WheelSpeeds, can/can0/Brake, ...
const CANBus = "can0"

// TopicCAN is the demo's bus topic.
const TopicCAN = "can/" + CANBus

// CANTopic is the bus as a stream of the simulation: its payloads are
// candump log lines (one frame each), published to a FIFO the recorder's
// [[source.can]] candump reads. It is not in Topics (no shm segment).
var CANTopic = Topic{Name: TopicCAN, Type: can.FrameType, Hz: 200, Size: 64}

// CANFrame returns the n-th frame of the bus at t: WheelSpeeds, Brake,
// Transmission and Steering in turn.
func (v Vehicle) CANFrame(t time.Duration, n uint64) can.Frame {
	f := can.Frame{DLC: 8, Len: 8}
	le, be := binary.LittleEndian, binary.BigEndian
	switch n % 4 {
	case 0: // WheelSpeeds: 4 x 16-bit Intel, 0.01 km/h
		kmh := v.Speed(t) * 3.6
		f.ID = 256
		for i := range 4 {
			w := kmh * (1 + 0.002*float64(i)) // the wheels differ a little
			le.PutUint16(f.Data[2*i:], uint16(math.Round(w*100)))
		}
	case 1: // Brake: 12-bit Motorola pressure (0.1 bar) from bit 7, pedal bit 11, Decel, a counter
		f.ID = 257
		var dbar uint16
		var decel int16
		if v.Braking(t) {
			dbar, decel = 820, int16(-v.Decel*1000)
		}
		f.Data[0], f.Data[1] = byte(dbar>>4), byte(dbar<<4)
		if dbar > 0 {
			f.Data[1] |= 0x08
		}
		be.PutUint16(f.Data[2:], uint16(decel))
		f.Data[7] = byte(n/4) & 0x0f
	case 2: // Transmission: gear D, mode 0 with the oil temperature
		f.ID, f.DLC, f.Len = 258, 2, 2
		f.Data[0] = 3
		f.Data[1] = byte((80+40)/2) << 2 // OilTemp 80 degC: raw*2 - 40
	case 3: // Steering (extended ID): angle, rate as float32, torque
		f.ID, f.Flags = 0x300, can.Extended
		angle := 15 * math.Sin(t.Seconds())
		le.PutUint16(f.Data[0:], uint16(int16(math.Round(angle*10))))
		le.PutUint32(f.Data[2:], math.Float32bits(float32(15*math.Cos(t.Seconds()))))
		le.PutUint16(f.Data[6:], uint16(int16(120)))
	}
	return f
}
