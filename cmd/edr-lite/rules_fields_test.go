package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestRulesTestFieldsByName: rules test runs a rule reading fields by name
// over the typed dump. vehicle/speed changes layout halfway (f32le, then
// f64le speed): m.speed reads both, the shipped threshold rule with the
// by-name path param too, where its offset params read the f64's low
// bytes after the change; a protobuf field (clock's seconds) and a JSON
// one (calibration's wheelbase) read by name; a name the type lacks
// disables the rule naming topic and field.
func TestRulesTestFieldsByName(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "typed.pack")
	writeTypedDump(t, dump, typedTestMessages())
	rule := filepath.Join(dir, "fields.lua")
	os.WriteFile(rule, []byte(`rule{name='fields', topics={'vehicle/speed', 'clock', 'calibration'}}
local fired = {}
function on_message(m)
  local key, v
  if m.topic == 'vehicle/speed' then key, v = 'speed', m.speed
  elseif m.topic == 'clock' then key, v = 'clock', m:f('seconds')
  else key, v = 'wheelbase', m.wheelbase end
  if key == 'speed' and v == 24.5 or key ~= 'speed' and not fired[key] then
    fired[key] = true
    trigger{reason = key, tag = string.format('%s=%.10g', key, v)}
  end
end
`), 0o644)
	code, out, errs := runBin(t, "rules", "test", "--mode", "input-only", "--rules", rule, dump)
	if code != exitOK {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, want := range []string{`"tag":"speed=24.5"`, `"tag":"clock=` + strconv.FormatInt(t0/1e9, 10) + `"`, `"tag":"wheelbase=2.7"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %s:\n%s", want, out)
		}
	}
	// the shipped threshold by name fires once speed passes 20 (round 41,
	// layout B); by offset the f64's low 4 bytes as an f32 never do
	code, out, _ = runBin(t, "rules", "test", "--mode", "input-only", "--rules", "builtin:threshold",
		"--param", "threshold.topic=vehicle/speed", "--param", "threshold.high=20", "--param", "threshold.path=speed", dump)
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"tag":"vehicle/speed=20.5 \u003e 20"`) {
		t.Errorf("threshold by name: code %d, stdout %q", code, out)
	}
	code, out, _ = runBin(t, "rules", "test", "--mode", "input-only", "--rules", "builtin:threshold",
		"--param", "threshold.topic=vehicle/speed", "--param", "threshold.high=20", dump)
	if code != exitOK || strings.Contains(out, "vehicle/speed=") {
		t.Errorf("threshold by offset: code %d, stdout %q", code, out)
	}
	os.WriteFile(rule, []byte("rule{name='typo', topics='vehicle/speed'}\nfunction on_message(m) local v = m.sped end\n"), 0o644)
	code, out, errs = runBin(t, "rules", "test", "--mode", "input-only", "--rules", rule, dump)
	if !strings.Contains(out+errs, "m.sped: topic vehicle/speed (vehicle.Speed)") || !strings.Contains(out+errs, "no field sped") {
		t.Errorf("typo: code %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestRulesTestEventTime: rules test runs a rule in the event time its
// messages carry (rule{ time = "event", event_time = "t" }): m.ts is the
// packed field, 250 ms before the capture time; the trigger is still
// recorded at the capture time.
func TestRulesTestEventTime(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "imu.pack")
	typ := ingest.Packed("demo.Imu", "u64le t (ns); f32le ax")
	var msgs []typedMsg
	for i := range 10 {
		capNs := t0 + int64(i)*10e6
		d := binary.LittleEndian.AppendUint64(nil, uint64(capNs-250e6))
		msgs = append(msgs, typedMsg{"imu", typ, capNs, binary.LittleEndian.AppendUint32(d, math.Float32bits(float32(i)))})
	}
	writeTypedDump(t, dump, msgs)
	rule := filepath.Join(dir, "ev.lua")
	os.WriteFile(rule, []byte(`rule{name='ev', topics='imu', time='event', event_time='t'}
function on_message(m)
  if m.ax == 5 then trigger{tag = string.format('%d', (m.ts - `+strconv.FormatInt(t0, 10)+`) / 1e6)} end
end
`), 0o644)
	code, out, errs := runBin(t, "rules", "test", "--mode", "input-only", "--rules", rule, dump)
	want := fmt.Sprintf(`"time_ns":%d,`, t0+50e6)
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"tag":"-200"`) || !strings.Contains(out, want) {
		t.Errorf("code %d, stdout %q, stderr %q; want tag -200 (50 ms - 250 ms) at capture time %s", code, out, errs, want)
	}
}
