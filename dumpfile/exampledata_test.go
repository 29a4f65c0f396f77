package dumpfile

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

var update = flag.Bool("update", false, "rewrite testdata/drive.pack and testdata/brake.mcap")

// The examples' dumps: testdata/drive.pack (one second of a drive: a
// packed-struct speed topic at 10 Hz, a JSON gear topic, a raw log topic,
// a trigger) and testdata/brake.mcap (a JSON brake topic at 5 Hz over the
// same second, a trigger). TestExampleData keeps them what writeDrive and
// writeBrake make (go test ./dumpfile -run TestExampleData -update).
const exampleT0 = 1764670000000000000 // 2025-12-02T10:06:40Z

var (
	speedType = ingest.Packed("vehicle.Speed", "f32le speed (m/s); f32le pedal")
	gearType  = ingest.Type{MessageEncoding: ingest.EncodingJSON, Schema: ingest.Schema{Name: "vehicle.Gear"}}
	brakeType = ingest.Type{MessageEncoding: ingest.EncodingJSON, Schema: ingest.Schema{Name: "brake.Pressure",
		Encoding: ingest.SchemaJSON, Data: []byte(`{"type":"object","properties":{"bar":{"type":"number"}}}`)}}
)

func speedMsg(speed, pedal float32) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, math.Float32bits(speed))
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(pedal))
	return b
}

func writeDrive(path string) error {
	w, err := pack.Create(path, pack.WriterOptions{Writer: "edr-lite example", CreatedNs: exampleT0 + 2e9})
	if err != nil {
		return err
	}
	add := func(topic string, typ ingest.Type, ts int64, data []byte) error {
		if err := w.SetTopicType(topic, "", typ, ts); err != nil {
			return err
		}
		return w.Add(topic, "", nil, ts-1000, ts, data)
	}
	for i := range 10 {
		ts := exampleT0 + int64(i)*100e6
		if err := add("vehicle/speed", speedType, ts, speedMsg(20-float32(i)*1.5, float32(i)/10)); err != nil {
			return err
		}
		switch i {
		case 0, 6:
			gear := map[int]string{0: `{"gear":"D"}`, 6: `{"gear":"N"}`}[i]
			if err := add("vehicle/gear", gearType, ts+5e6, []byte(gear)); err != nil {
				return err
			}
		case 2, 5, 8:
			if err := add("log", ingest.Raw("text"), ts+7e6, fmt.Appendf(nil, "tick %d", i)); err != nil {
				return err
			}
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Writer: "edr-lite example", StartNs: exampleT0, EndNs: exampleT0 + 1e9,
		Triggers: []dumpinfo.Trigger{{ID: 1, Source: dumpinfo.SourceLua, Rule: "hard_brake", Reason: "hard-brake", TimeNs: exampleT0 + 500e6, FromNs: exampleT0, ToNs: exampleT0 + 1e9}}}); err != nil {
		return err
	}
	return w.Close()
}

func writeBrake(path string) error {
	w, err := mcap.CreatePackWriter(path, mcap.FileOptions{Options: mcap.Options{Library: "edr-lite example"}})
	if err != nil {
		return err
	}
	if err := w.DeclareTopic(mcap.Topic{Name: "brake/pressure", Type: brakeType}); err != nil {
		return err
	}
	for i := range 5 {
		ts := exampleT0 + 50e6 + int64(i)*200e6
		if err := w.Add("brake/pressure", "", nil, 0, ts, fmt.Appendf(nil, `{"bar":%d}`, i*i)); err != nil {
			return err
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Writer: "edr-lite example", StartNs: exampleT0, EndNs: exampleT0 + 1e9,
		Triggers: []dumpinfo.Trigger{{ID: 2, Source: dumpinfo.SourceCommand, Reason: "button", TimeNs: exampleT0 + 850e6, FromNs: exampleT0, ToNs: exampleT0 + 1e9}}}); err != nil {
		return err
	}
	return w.Close()
}

// TestExampleData: the examples' dumps are what writeDrive and writeBrake
// make, byte for byte.
func TestExampleData(t *testing.T) {
	for name, write := range map[string]func(string) error{"drive.pack": writeDrive, "brake.mcap": writeBrake} {
		p := filepath.Join(t.TempDir(), name)
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(want, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if b, err := os.ReadFile(want); err != nil || !bytes.Equal(b, got) {
			t.Errorf("%s differs from what the test writes (%v): go test ./dumpfile -run TestExampleData -update", want, err)
		}
	}
}
