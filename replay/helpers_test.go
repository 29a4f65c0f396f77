package replay

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// rec is one message written into a test dump.
type rec struct {
	name, ch  string
	gen, done int64
	meta      []byte
	data      []byte
}

// writeDump writes msgs (in order) into a new pack file under t.TempDir().
func writeDump(t testing.TB, name string, msgs []rec, info *dumpinfo.Info) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	w, err := pack.Create(p, pack.WriterOptions{Writer: "replay test", CreatedNs: 1, TargetFrameSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := w.Add(m.name, m.ch, m.meta, m.gen, m.done, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if info != nil {
		if err := w.SetDumpInfo(*info); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// payload is a checkable payload: its length and every byte depend on
// (topic, i).
func payload(topic string, i int, maxLen int) []byte {
	h := uint64(14695981039346656037)
	for _, c := range []byte(topic) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	x := h ^ uint64(i)*0x9E3779B97F4A7C15
	n := 8 + int(x%uint64(maxLen-7))
	b := make([]byte, n)
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// speedDump is a 100 Hz speed signal (f32le m/s) that cruises at 20 m/s and
// brakes at brake m/s^2 from t0+2s until it stops.
func speedDump(t0 int64, n int, brake float64) []rec {
	var out []rec
	v := 20.0
	for i := 0; i < n; i++ {
		ts := t0 + int64(i)*10e6
		if i >= 200 && v > 0 {
			v = math.Max(0, v-brake*0.01)
		}
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
		out = append(out, rec{name: "vehicle/speed", gen: ts - 1000, done: ts, data: b})
	}
	return out
}

// got is one message an Output received, copied.
type got struct {
	topic   string
	seq     uint64
	ts, gen int64
	done    int64
	meta    []byte
	data    []byte
	hasData bool
}

func collect(dst *[]got) OutputFunc {
	return func(m *Message) error {
		*dst = append(*dst, got{topic: m.Topic.String(), seq: m.Seq, ts: m.TimeNs, gen: m.GenNs, done: m.DoneNs,
			meta: bytes.Clone(m.Meta), data: bytes.Clone(m.Data), hasData: m.Data != nil})
		return nil
	}
}
