package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoCAN: "edr-lite demo --can", as a normal user would run it (a
// FIFO, no CAN interface, no raw socket): the dump holds the bus's frames
// and one topic per DBC message, the rule on the DBC signal WheelFL fired
// with the one on vehicle/speed (one dump), the report plots the signals,
// and the MCAP export carries them as numbers that the ecosystem's
// decoders read (decode.mjs, where node and its packages are installed).
func TestDemoCAN(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runBin(t, "demo", "--can", "--dir", dir, "--duration", "5s")
	if code != 0 {
		t.Fatalf("demo --can: %d\n%s\n%s", code, out, errs)
	}
	dumps, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
	if len(dumps) != 1 {
		t.Fatalf("%d dumps", len(dumps))
	}
	in := readInfoJSON(t, dumps[0])
	sources := map[string]bool{}
	for _, tr := range in.Triggers {
		sources[tr.Rule] = true
	}
	if !sources["hard_brake"] || !sources["hard_brake_can"] {
		t.Errorf("triggers %+v: want both hard_brake rules", in.Triggers)
	}
	topics := map[string]uint64{}
	for _, tp := range in.Topics {
		topics[tp.Name] = tp.Messages
	}
	for _, name := range []string{"can/can0", "can/can0/WheelSpeeds", "can/can0/Brake", "can/can0/Transmission", "can/can0/Steering"} {
		if topics[name] == 0 {
			t.Errorf("the dump has no %s: %v", name, topics)
		}
	}
	code, out, _ = runBin(t, "cat", "--decode", "--topics", "can/can0/Transmission", "--limit", "1", dumps[0])
	if code != 0 || !strings.Contains(out, `"Gear":3,"Gear_label":"D","Mode":0,"OilTemp":80`) {
		t.Errorf("cat Transmission: %d %s", code, out)
	}
	html := filepath.Join(dir, "report.html")
	if code, _, errs := runBin(t, "report", dumps[0], "-o", html); code != 0 {
		t.Fatalf("report: %s", errs)
	}
	page, _ := os.ReadFile(html)
	for _, want := range []string{"WheelFL (km/h)", "BrakePressure (bar)", "SteeringAngle (deg)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report does not plot %s", want)
		}
	}
	mc := filepath.Join(dir, "demo.mcap")
	if code, _, errs := runBin(t, "export", "--format", "mcap", dumps[0], "-o", mc); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	code, out, _ = runBin(t, "cat", "--decode", "--topics", "can/can0/Brake", "--limit", "400", mc)
	if code != 0 || !strings.Contains(out, `"BrakePressure":82`) {
		t.Errorf("cat Brake of the MCAP export: %d %.500s", code, out)
	}
	b, _ := os.ReadFile(mc)
	if !strings.Contains(string(b), `"WheelFL":{"type":"number","description":"unit: km/h"}`) {
		t.Error("the MCAP export's JSON Schema of dbc.WheelSpeeds has no number WheelFL")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "mcap", "testdata", "node", "node_modules")); err == nil {
		res := nodeDecode(t, nodeDecoder(t), mc)
		ws := res[mc]["can/can0/WheelSpeeds"]
		if ws == nil || ws.MessageEncoding != "json" || len(ws.Decoded) == 0 {
			t.Fatalf("decode.mjs: %+v", ws)
		}
		var m map[string]any
		if err := json.Unmarshal(ws.Decoded[0], &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["WheelFL"].(float64); !ok {
			t.Errorf("decode.mjs read WheelFL as %T (%v)", m["WheelFL"], m)
		}
	}
}
