package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/demo"
	"github.com/edr-lite/edr-lite/media"
	"github.com/edr-lite/edr-lite/pack"
)

var (
	demoOnce sync.Once
	demoPath string
	demoOut  string // its standard output
	demoErr  string
)

// liveDemoDump runs "edr-lite demo --duration 5s" once per test run (beside
// the binary, so it is removed with it) and returns its dump and what it
// printed. Tests must not change the dump.
func liveDemoDump(t *testing.T) (string, string) {
	t.Helper()
	bin := edrBinary(t)
	demoOnce.Do(func() {
		dir := filepath.Join(filepath.Dir(bin), "demo")
		code, out, errs := runBin(t, "demo", "--dir", dir, "--duration", "5s")
		dumps, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
		if code != 0 || len(dumps) != 1 {
			demoErr = fmt.Sprintf("demo: exit %d, dumps %v\nstdout:\n%s\nstderr:\n%s", code, dumps, out, errs)
			return
		}
		demoPath, demoOut = dumps[0], out
	})
	if demoErr != "" {
		t.Fatal(demoErr)
	}
	return demoPath, demoOut
}

// nodeDecoder returns mcap/testdata/node, where decode.mjs runs, or skips
// the test when node or the npm packages are missing (.ci/run installs
// them with npm ci).
func nodeDecoder(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("needs node for the ecosystem's decoders: %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "mcap", "testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"@mcap/support", "@foxglove/rosmsg", "@foxglove/rosmsg2-serialization"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			t.Skipf("needs `npm ci` in %s (%s): %v", dir, p, err)
		}
	}
	return dir
}

// nodeTopic is what decode.mjs reports of one topic.
type nodeTopic struct {
	MessageEncoding string            `json:"messageEncoding"`
	SchemaName      string            `json:"schemaName"`
	SchemaEncoding  string            `json:"schemaEncoding"`
	Messages        int               `json:"messages"`
	Errors          []string          `json:"errors"`
	Decoded         []json.RawMessage `json:"decoded"`
}

// nodeDecode runs decode.mjs over files.
func nodeDecode(t *testing.T, dir string, files ...string) map[string]map[string]*nodeTopic {
	t.Helper()
	cmd := exec.Command("node", append([]string{"decode.mjs"}, files...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node decode.mjs: %v\n%s", err, errb.String())
	}
	var res map[string]struct {
		Error  string
		Topics map[string]*nodeTopic
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode.mjs output: %v\n%.2000s", err, out)
	}
	all := map[string]map[string]*nodeTopic{}
	for f, r := range res {
		if r.Error != "" {
			t.Fatalf("%s: decode.mjs: %s", f, r.Error)
		}
		for name, tp := range r.Topics {
			if len(tp.Errors) > 0 || len(tp.Decoded) != tp.Messages {
				t.Errorf("%s: %s: %d messages, %d decoded, errors %q", filepath.Base(f), name, tp.Messages, len(tp.Decoded), tp.Errors)
			}
		}
		all[f] = r.Topics
	}
	return all
}

// rosLevel is the ROS 2 topic of the acceptance test: a message with a
// nested builtin_interfaces/Time, a float64, a string and a sequence.
var rosLevel = ingest.Type{MessageEncoding: ingest.EncodingCDR, Schema: ingest.Schema{Name: "edr_test/msg/Level",
	Encoding: ingest.SchemaROS2Msg, Data: []byte(`builtin_interfaces/Time stamp
float64 level
string label
int32[] counts
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
`)}}

// cdrLevel encodes one edr_test/msg/Level in little-endian CDR: the
// encapsulation header, then each field at its alignment from the end of
// the header.
func cdrLevel(sec int32, nsec uint32, level float64, label string, counts []int32) []byte {
	b := []byte{0x00, 0x01, 0x00, 0x00} // CDR_LE
	align := func(n int) {
		for (len(b)-4)%n != 0 {
			b = append(b, 0)
		}
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(sec))
	b = le.AppendUint32(b, nsec)
	align(8)
	b = le.AppendUint64(b, math.Float64bits(level))
	align(4)
	b = le.AppendUint32(b, uint32(len(label)+1))
	b = append(append(b, label...), 0)
	align(4)
	b = le.AppendUint32(b, uint32(len(counts)))
	for _, c := range counts {
		b = le.AppendUint32(b, uint32(c))
	}
	return b
}

// TestNodeDecodesDemo is issue 16's acceptance test: the MCAP export of
// the demo's dump, read with the ecosystem's own decoders (decode.mjs:
// @mcap/support's protobufFromBinaryDescriptor, JSON.parse,
// @foxglove/rosmsg + @foxglove/rosmsg2-serialization), decodes every
// message of every channel: speed, brake pedal and IMU (packed, transcoded
// to JSON) as numbers equal to what cat --decode prints, the camera as
// foxglove.CompressedImage whose JPEG image/jpeg decodes, the calibration
// as JSON; and a ROS 2 (cdr + ros2msg) topic written into a pack file
// here, exported, decodes to the values encoded.
func TestNodeDecodesDemo(t *testing.T) {
	node := nodeDecoder(t)
	in, _ := liveDemoDump(t)
	dir := t.TempDir()
	mc := filepath.Join(dir, "demo.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", in, "-o", mc); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}

	// the ROS 2 topic
	rosPack, rosMCAP := filepath.Join(dir, "ros.pack"), filepath.Join(dir, "ros.mcap")
	w, err := pack.Create(rosPack, pack.WriterOptions{Writer: "ros test"})
	if err != nil {
		t.Fatal(err)
	}
	type level struct {
		Stamp struct {
			Sec     int32  `json:"sec"`
			Nanosec uint32 `json:"nanosec"`
		} `json:"stamp"`
		Level  float64 `json:"level"`
		Label  string  `json:"label"`
		Counts []int32 `json:"counts"`
	}
	var levels []level
	for i := range 20 {
		var l level
		l.Stamp.Sec, l.Stamp.Nanosec = int32(1800000000+i), uint32(i*1e7)
		l.Level, l.Label = float64(i)*0.125-1, strings.Repeat("é", i%4)+"tank"
		l.Counts = make([]int32, i%5)
		for j := range l.Counts {
			l.Counts[j] = int32(j*1000 - i)
		}
		levels = append(levels, l)
		ts := t0 + int64(i)*1e7
		if err := w.SetTopicType("ros/level", "", rosLevel, ts); err != nil {
			t.Fatal(err)
		}
		if err := w.Add("ros/level", "", nil, ts, ts, cdrLevel(l.Stamp.Sec, l.Stamp.Nanosec, l.Level, l.Label, l.Counts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runBin(t, "export", "--format", "mcap", rosPack, "-o", rosMCAP); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}

	res := nodeDecode(t, node, mc, rosMCAP)
	topics := res[mc]

	// every topic of the dump, with all its messages
	info := readInfoJSON(t, in)
	if len(topics) != len(info.Topics) || len(topics) != len(demo.Topics) {
		t.Errorf("decoded topics %d, dump %d, demo %d", len(topics), len(info.Topics), len(demo.Topics))
	}
	for _, tp := range info.Topics {
		if nt := topics[tp.Name]; nt == nil || uint64(nt.Messages) != tp.Messages {
			t.Errorf("%s: dump holds %d messages, decoded %+v", tp.Name, tp.Messages, nt)
		}
	}
	wantEnc := map[string][2]string{
		demo.TopicSpeed: {"json", "jsonschema"}, demo.TopicBrake: {"json", "jsonschema"}, demo.TopicIMU: {"json", "jsonschema"},
		demo.TopicCamera: {"protobuf", "protobuf"}, demo.TopicCalibration: {"json", "jsonschema"},
	}
	for name, enc := range wantEnc {
		if nt := topics[name]; nt == nil || nt.MessageEncoding != enc[0] || nt.SchemaEncoding != enc[1] {
			t.Errorf("%s: %+v, want %v", name, nt, enc)
		}
	}

	// the JSON topics decode to what cat --decode prints of the pack dump
	for _, name := range []string{demo.TopicSpeed, demo.TopicBrake, demo.TopicIMU, demo.TopicCalibration} {
		code, out, errs := runBin(t, "cat", in, "--decode", "--topics", name)
		if code != 0 || errs != "" {
			t.Fatalf("cat --decode %s: %d %s", name, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		nt := topics[name]
		if nt == nil || len(lines) != len(nt.Decoded) {
			t.Fatalf("%s: cat --decode %d lines, node %+v", name, len(lines), nt)
		}
		for i, line := range lines {
			var l struct{ Data json.RawMessage }
			json.Unmarshal([]byte(line), &l)
			var a, b any
			json.Unmarshal(l.Data, &a)
			json.Unmarshal(nt.Decoded[i], &b)
			if !reflect.DeepEqual(a, b) || a == nil {
				t.Fatalf("%s message %d: cat --decode %s, node %s", name, i, l.Data, nt.Decoded[i])
			}
		}
	}
	var speed struct{ Speed *float64 }
	if json.Unmarshal(topics[demo.TopicSpeed].Decoded[0], &speed); speed.Speed == nil {
		t.Errorf("speed has no numeric field: %s", topics[demo.TopicSpeed].Decoded[0])
	}
	// the camera: foxglove.CompressedImage with a JPEG of the demo's size
	for i, raw := range topics[demo.TopicCamera].Decoded {
		var ci struct {
			Timestamp struct {
				Seconds string
				Nanos   int64
			}
			FrameID string `json:"frame_id"` // protobufjs from a descriptor keeps the proto names
			Format  string
			Data    string
		}
		if err := json.Unmarshal(raw, &ci); err != nil {
			t.Fatal(err)
		}
		img, err := base64.StdEncoding.DecodeString(ci.Data)
		if err != nil {
			t.Fatalf("camera frame %d: %v", i, err)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(img))
		if err == nil {
			_, err = jpeg.Decode(bytes.NewReader(img))
		}
		if err != nil || cfg.Width != demo.CameraWidth || cfg.Height != demo.CameraHeight || ci.Format != "jpeg" ||
			ci.FrameID != demo.CameraFrameID || ci.Timestamp.Seconds == "" {
			t.Fatalf("camera frame %d: %v %+v, format %q frame %q stamp %+v", i, err, cfg, ci.Format, ci.FrameID, ci.Timestamp)
		}
	}
	if len(topics[demo.TopicCamera].Decoded) < 100 {
		t.Errorf("%d camera frames", len(topics[demo.TopicCamera].Decoded))
	}
	if nt := topics[demo.TopicCamera]; nt.SchemaName != media.SchemaCompressedImage {
		t.Errorf("camera schema %q", nt.SchemaName)
	}

	// the ROS 2 topic: every message, every field as encoded
	rt := res[rosMCAP]["ros/level"]
	if rt == nil || rt.MessageEncoding != "cdr" || rt.SchemaEncoding != "ros2msg" || len(rt.Decoded) != len(levels) {
		t.Fatalf("ros/level: %+v", rt)
	}
	for i, raw := range rt.Decoded {
		var got level
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Counts) == 0 {
			got.Counts = []int32{}
		}
		want := levels[i]
		if len(want.Counts) == 0 {
			want.Counts = []int32{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ros/level message %d: %+v, want %+v (%s)", i, got, want, raw)
		}
	}
}

// TestDemoTyped: the demo's dump is typed (info shows each topic's
// encoding and schema) and reads as signals without node: the MCAP export
// of it gives, through cat --format csv, a numeric speed that falls from
// the cruise over the hard brake, and, through cat --decode, camera
// frames in JPEG that image/jpeg decodes.
func TestDemoTyped(t *testing.T) {
	in, _ := liveDemoDump(t)
	var info struct {
		Topics []struct{ Name, Type, Encoding string }
	}
	code, out, errs := runBin(t, "info", "--json", in)
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("info: %d %s", code, errs)
	}
	want := map[string]string{}
	for _, tp := range demo.Topics {
		want[tp.Name] = tp.Type.MessageEncoding + " " + tp.Type.Schema.Name
	}
	for _, tp := range info.Topics {
		if got := tp.Encoding + " " + tp.Type; got != want[tp.Name] {
			t.Errorf("info: %s is %s, want %s", tp.Name, got, want[tp.Name])
		}
	}
	mc := filepath.Join(t.TempDir(), "demo.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", in, "-o", mc); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	code, out, errs = runBin(t, "cat", mc, "--format", "csv", "--fields", "speed", "--topics", demo.TopicSpeed)
	if code != 0 || errs != "" {
		t.Fatalf("cat --format csv: %d %s", code, errs)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	var speeds []float64
	for _, r := range rows[1:] {
		var v float64
		if _, err := fmt.Sscan(r[strings.LastIndexByte(r, ',')+1:], &v); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		speeds = append(speeds, v)
	}
	v := demo.DefaultVehicle()
	if len(speeds) < 400 || speeds[0] != v.Cruise || speeds[len(speeds)-1] > v.Cruise-v.Decel*1.5 {
		t.Errorf("%d speeds from %v to %v, want the cruise (%v) down by 1.5 s of braking", len(speeds), speeds[0], speeds[len(speeds)-1], v.Cruise)
	}
	// --fields by index, in the pack dump and the MCAP export alike
	for _, f := range []string{in, mc} {
		code, out, errs = runBin(t, "cat", f, "--decode", "--fields", "accel[2],gyro[2]", "--topics", demo.TopicIMU, "--limit", "1")
		var l struct{ Data map[string]float64 }
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Data) != 2 ||
			math.Abs(l.Data["accel[2]"]-9.81) > 1e-5 || math.Abs(l.Data["gyro[2]"]-0.01) > 1e-6 {
			t.Errorf("cat --decode --fields of %s: %d %s %s", filepath.Base(f), code, out, errs)
		}
	}
	code, out, errs = runBin(t, "cat", mc, "--decode", "--topics", demo.TopicCamera, "--limit", "3")
	if code != 0 || errs != "" {
		t.Fatalf("cat --decode camera: %d %s", code, errs)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct {
			Type string
			Data struct{ Format, Data string }
		}
		json.Unmarshal([]byte(line), &l)
		img, _ := base64.StdEncoding.DecodeString(l.Data.Data)
		if _, err := jpeg.Decode(bytes.NewReader(img)); err != nil || l.Type != media.SchemaCompressedImage || l.Data.Format != "jpeg" {
			t.Errorf("camera frame: %v, %.200s", err, line)
		}
	}
}
