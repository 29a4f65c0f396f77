package schema

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

var (
	sinkF float64
	sinkB []byte
)

// imuLayout is a fixed-size packed struct as an IMU ECU sends it.
const imuLayout = `u64le t (ns); u32le seq
f32le acc[3] (m/s^2); f32le gyro[3] (rad/s); f32le temp (°C); u8 status; pad 3`

func imuMessage() []byte {
	m := binary.LittleEndian.AppendUint64(nil, 1_796_169_600_000_000_000)
	m = binary.LittleEndian.AppendUint32(m, 42)
	for i := range 7 {
		m = binary.LittleEndian.AppendUint32(m, math.Float32bits(float32(i)*0.125-0.3))
	}
	return append(m, 1, 0, 0, 0)
}

// imuGo is the Go struct a hand-written converter would marshal.
type imuGo struct {
	T      uint64     `json:"t"`
	Seq    uint32     `json:"seq"`
	Acc    [3]float32 `json:"acc"`
	Gyro   [3]float32 `json:"gyro"`
	Temp   float32    `json:"temp"`
	Status uint8      `json:"status"`
}

func fieldsPerSecond(b *testing.B, fields int) {
	b.ReportMetric(float64(fields)/b.Elapsed().Seconds(), "fields/s")
}

// BenchmarkAccessor reads one field by name through an Accessor; the
// baseline is a hand-written binary.LittleEndian read at the same offset.
func BenchmarkAccessor(b *testing.B) {
	imu := MustParseLayout(imuLayout)
	ex := MustParseLayout(example)
	for _, c := range []struct {
		name string
		l    *Layout
		path string
		msg  []byte
	}{
		{"field=gyro[2]", imu, "gyro[2]", imuMessage()},
		{"field=t", imu, "t", imuMessage()},
		{"field=p.y/after-a-string", ex, "p.y", exampleMessage()},
	} {
		a, err := c.l.Accessor(c.path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			n, sum := 0, 0.0
			for b.Loop() {
				v, _ := a.Float64(c.msg)
				sum += v
				n++
			}
			fieldsPerSecond(b, n)
			sinkF = sum
		})
	}
	b.Run("baseline=binary.LittleEndian", func(b *testing.B) {
		b.ReportAllocs()
		msg := imuMessage()
		off := 8 + 4 + 5*4 // gyro[2]
		n, sum := 0, 0.0
		for b.Loop() {
			if len(msg) >= off+4 {
				sum += float64(math.Float32frombits(binary.LittleEndian.Uint32(msg[off:])))
			}
			n++
		}
		fieldsPerSecond(b, n)
		sinkF = sum
	})
}

// BenchmarkPackedJSON transcodes a packed message to JSON; the baseline
// marshals the equivalent Go struct with encoding/json.
func BenchmarkPackedJSON(b *testing.B) {
	for _, c := range []struct {
		name string
		l    *Layout
		msg  []byte
	}{
		{"layout=imu", MustParseLayout(imuLayout), imuMessage()},
		{"layout=example", MustParseLayout(example), exampleMessage()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.msg)))
			dst := make([]byte, 0, 1024)
			for b.Loop() {
				dst, _ = c.l.AppendJSON(dst[:0], c.msg)
			}
			sinkB = dst
		})
		b.Run(c.name+"/op=Numeric", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.msg)))
			n, sum := 0, 0.0
			fn := func(_ []byte, v float64) { sum += v; n++ }
			for b.Loop() {
				c.l.Numeric(c.msg, fn)
			}
			fieldsPerSecond(b, n)
			sinkF = sum
		})
	}
	b.Run("baseline=encoding/json-struct", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(imuMessage())))
		v := imuGo{T: 1_796_169_600_000_000_000, Seq: 42, Acc: [3]float32{-0.3, -0.175, -0.05},
			Gyro: [3]float32{0.075, 0.2, 0.325}, Temp: 0.45, Status: 1}
		for b.Loop() {
			sinkB, _ = json.Marshal(&v)
		}
	})
}

// BenchmarkProtobuf decodes a Vehicle (19 fields, nested, repeated, a map)
// through the Decoder; the baselines are the dynamicpb unmarshal alone and
// the unmarshal plus protojson that AppendJSON wraps.
func BenchmarkProtobuf(b *testing.B) {
	typ, md := vehicleType(b, "Vehicle")
	msg := vehicleMessage(b, md)
	d, err := NewDecoder(typ)
	if err != nil {
		b.Fatal(err)
	}
	et, err := NewEventTime(typ, "header.stamp", UnitStamp)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("op=AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			dst, _ = d.AppendJSON(dst[:0], msg)
		}
		sinkB = dst
	})
	b.Run("op=Numeric", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		n, sum := 0, 0.0
		for b.Loop() {
			d.Numeric(msg, func(_ []byte, v float64) { sum += v; n++ })
		}
		fieldsPerSecond(b, n)
		sinkF = sum
	})
	b.Run("op=EventTime", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			ns, _ := et.Ns(msg)
			sinkF += float64(ns)
		}
	})
	b.Run("baseline=dynamicpb-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(msg, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=dynamicpb+protojson", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			m := dynamicpb.NewMessage(md)
			proto.Unmarshal(msg, m)
			dst, _ = protojson.MarshalOptions{}.MarshalAppend(dst[:0], m)
		}
		sinkB = dst
	})
}
