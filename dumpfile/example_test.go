package dumpfile_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
)

// at prints a message time as the offset into the examples' second.
func at(ns int64) string { return time.Duration(ns - 1764670000000000000).String() }

// Read a dump: every message in time order, with its topic and type.
func Example() {
	tl, err := dumpfile.OpenTimeline("testdata/drive.pack")
	if err != nil {
		log.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages()
	if err != nil {
		log.Fatal(err)
	}
	for n := 0; n < 5; n++ {
		m, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // names the file, the offset and what is damaged
		}
		fmt.Printf("%-7s %-13s %-12s %-13s %d bytes\n", at(m.TimeNs), m.Topic(), m.Type.MessageEncoding, m.Type.Schema.Name, len(m.Data))
	}
	// Output:
	// 0s      vehicle/speed x-edr-packed vehicle.Speed 8 bytes
	// 5ms     vehicle/gear  json         vehicle.Gear  12 bytes
	// 100ms   vehicle/speed x-edr-packed vehicle.Speed 8 bytes
	// 200ms   vehicle/speed x-edr-packed vehicle.Speed 8 bytes
	// 207ms   log           x-edr-raw    text          6 bytes
}

// Filter by topic and time: the globs of the command's --topics and
// --exclude, both ends of the window included.
func ExampleTimeline_Messages() {
	tl, err := dumpfile.OpenTimeline("testdata/drive.pack")
	if err != nil {
		log.Fatal(err)
	}
	defer tl.Close()
	const t0 = 1764670000000000000
	it, err := tl.Messages(dumpfile.WithTopics("vehicle/*"), dumpfile.WithoutTopics("vehicle/gear"),
		dumpfile.From(t0+300e6), dumpfile.To(t0+500e6))
	if err != nil {
		log.Fatal(err)
	}
	for {
		m, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(at(m.TimeNs), m.Topic())
	}
	// Output:
	// 300ms vehicle/speed
	// 400ms vehicle/speed
	// 500ms vehicle/speed
}

// Decode a field by path, whatever the topic's type: a packed struct by
// its layout here, protobuf and JSON alike.
func ExampleDecoder_Field() {
	tl, err := dumpfile.OpenTimeline("testdata/drive.pack")
	if err != nil {
		log.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages(dumpfile.WithTopics("vehicle/speed"), dumpfile.To(1764670000000000000+300e6))
	if err != nil {
		log.Fatal(err)
	}
	dec := dumpfile.NewDecoder()
	for {
		m, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		v, ok, err := dec.Field(m.Type, m.Data, "speed")
		if err != nil || !ok {
			log.Fatalf("%s: speed: %v", m.Topic(), err)
		}
		js, _ := dec.JSON(m.Type, m.Data)
		fmt.Printf("%s speed %.1f m/s %s\n", at(m.TimeNs), v.Num, js)
	}
	// Output:
	// 0s speed 20.0 m/s {"speed":20,"pedal":0}
	// 100ms speed 18.5 m/s {"speed":18.5,"pedal":0.1}
	// 200ms speed 17.0 m/s {"speed":17,"pedal":0.2}
	// 300ms speed 15.5 m/s {"speed":15.5,"pedal":0.3}
}

// Merge two files: a pack dump and an MCAP dump read as one timeline, in
// time order; Iterator.Source says which file each message came from.
// (dumpfile.Merge writes such a merge to a new dump.)
func ExampleOpenTimeline() {
	tl, err := dumpfile.OpenTimeline("testdata/drive.pack", "testdata/brake.mcap")
	if err != nil {
		log.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages(dumpfile.WithTopics("brake/*", "vehicle/speed"), dumpfile.To(1764670000000000000+400e6))
	if err != nil {
		log.Fatal(err)
	}
	for {
		m, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-6s %-15s %s\n", at(m.TimeNs), m.Topic(), it.Source().Format)
	}
	for _, t := range tl.Topics() {
		fmt.Println(t.String(), t.Messages, t.Type.Schema.Name)
	}
	// Output:
	// 0s     vehicle/speed   pack
	// 50ms   brake/pressure  mcap
	// 100ms  vehicle/speed   pack
	// 200ms  vehicle/speed   pack
	// 250ms  brake/pressure  mcap
	// 300ms  vehicle/speed   pack
	// 400ms  vehicle/speed   pack
	// log 3 text
	// vehicle/gear 2 vehicle.Gear
	// vehicle/speed 10 vehicle.Speed
	// brake/pressure 5 brake.Pressure
}

// Write a typed dump: each topic's type (a packed struct by its layout,
// JSON) declared once, then the messages in time order; "edr-lite info"
// shows the types and "edr-lite cat --decode" decodes the messages.
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "typed.pack") // WriterOptions{Format: dumpfile.FormatMCAP} for MCAP
	w, err := dumpfile.Create(path, dumpfile.WriterOptions{Writer: "my-tool", Compression: "zstd"})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.SetType("imu", ingest.Packed("demo.Imu", "f32le ax (m/s2); f32le ay (m/s2)")); err != nil {
		log.Fatal(err)
	}
	if err := w.SetType("mode", ingest.Type{MessageEncoding: ingest.EncodingJSON}); err != nil {
		log.Fatal(err)
	}
	const t0 = 1764670000000000000
	for i := range 3 {
		imu := make([]byte, 8)
		binary.LittleEndian.PutUint32(imu, math.Float32bits(float32(i)/2))
		binary.LittleEndian.PutUint32(imu[4:], math.Float32bits(-1))
		if err := w.Write("imu", t0+int64(i)*10e6, 0, imu); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Write("mode", t0+25e6, t0+24e6, []byte(`{"mode":"auto"}`)); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	tl, err := dumpfile.OpenTimeline(path)
	if err != nil {
		log.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages()
	if err != nil {
		log.Fatal(err)
	}
	dec := dumpfile.NewDecoder()
	for {
		m, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		js, err := dec.JSON(m.Type, m.Data)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s %s %s\n", at(m.TimeNs), m.Topic(), m.Type.MessageEncoding, js)
	}
	// Output:
	// 0s imu x-edr-packed {"ax":0,"ay":-1}
	// 10ms imu x-edr-packed {"ax":0.5,"ay":-1}
	// 20ms imu x-edr-packed {"ax":1,"ay":-1}
	// 25ms mode json {"mode":"auto"}
}
