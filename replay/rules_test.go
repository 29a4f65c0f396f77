package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/scripts"
)

const t0 = int64(1_764_670_000_000_000_000)

// brakeDump writes a speed signal braking at 8 m/s^2 from +2s, with the
// trigger the live hard_brake rule recorded (at the first braking sample)
// and one trigger from another source.
func brakeDump(t *testing.T, recordedAt int64) string {
	info := &dumpinfo.Info{Triggers: []dumpinfo.Trigger{
		{ID: 7, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", TimeNs: recordedAt, PreNs: 15e9, PostNs: 5e9},
		{ID: 8, Reason: "manual", Source: "api", TimeNs: t0 + 1e9},
	}}
	return writeDump(t, "brake.pack", speedDump(t0, 500, 8), info)
}

func jsonLines(t *testing.T, ts []Trigger) string {
	var b bytes.Buffer
	for _, tr := range ts {
		line, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestRulesHardBrakeRegression(t *testing.T) {
	brakeAt := t0 + 200*10e6
	dump := brakeDump(t, brakeAt)
	run := func(params map[string]string) *RulesResult {
		t.Helper()
		res, err := RunRules([]string{dump}, []string{"builtin:hard_brake"}, RulesOptions{Params: params})
		if err != nil {
			t.Fatal(err)
		}
		if d := res.Disabled(); len(d) > 0 {
			t.Fatalf("disabled rules: %v", d)
		}
		return res
	}
	res := run(nil)
	if len(res.Fired) != 1 || res.Fired[0].TimeNs != brakeAt || res.Fired[0].Rule != "hard_brake" || res.Fired[0].Reason != "hard-brake" {
		t.Fatalf("fired %+v, want one hard_brake at +2s", res.Fired)
	}
	if res.Messages != 500 || len(res.Recorded) != 2 {
		t.Fatalf("%d messages, recorded %+v", res.Messages, res.Recorded)
	}
	c := CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond)
	if !c.OK() || len(c.Matched) != 1 || len(c.Unchecked) != 1 || c.Unchecked[0].Reason != "manual" {
		t.Fatalf("comparison %+v, want one match and the manual trigger unchecked", c)
	}
	// byte-identical output across runs
	if a, b := jsonLines(t, res.Fired), jsonLines(t, run(nil).Fired); a != b {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
	want := `{"rule":"hard_brake","reason":"hard-brake","time_ns":1764670002000000000,"time":"2025-12-02T10:06:42Z","tag":"8.0 m/s^2 from 20.0 to 19.9 m/s","severity":2,"params":{"cooldown":"10s","decel":"6","field":"f32le","max_gap":"1","max_per_minute":"6","name":"hard_brake","offset":"0","scale":"1","topic":"vehicle/speed"}}` + "\n"
	if got := jsonLines(t, res.Fired); got != want {
		t.Errorf("JSON line\n got %s\nwant %s", got, want)
	}

	// a stricter threshold no longer fires: the recorded trigger is missing
	res = run(map[string]string{"decel": "9"})
	c = CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond)
	if c.OK() || len(c.Missing) != 1 || len(res.Fired) != 0 {
		t.Fatalf("decel=9: comparison %+v, want the recorded trigger missing", c)
	}
	var diff bytes.Buffer
	c.WriteDiff(&diff, res.Fired, res.Recorded)
	if !strings.Contains(diff.String(), "- hard_brake hard-brake at 2025-12-02T10:06:42Z (lua in "+dump+"): recorded, not fired") {
		t.Errorf("diff:\n%s", diff.String())
	}
}

func TestCompareTolerance(t *testing.T) {
	brakeAt := t0 + 200*10e6
	f := func(recordedAt int64, tol time.Duration, ok bool, diffHas string) {
		t.Helper()
		res, err := RunRules([]string{brakeDump(t, recordedAt)}, []string{"builtin:hard_brake"}, RulesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := CompareTriggers(res.Fired, res.Recorded, res.Rules, tol)
		var diff bytes.Buffer
		c.WriteDiff(&diff, res.Fired, res.Recorded)
		if c.OK() != ok || !strings.Contains(diff.String(), diffHas) {
			t.Errorf("recorded at %+d, tolerance %v: ok %v, diff\n%s\nwant ok %v and %q", recordedAt-brakeAt, tol, c.OK(), diff.String(), ok, diffHas)
		}
	}
	f(brakeAt+500e3, time.Millisecond, true, "matched (-500µs)")
	f(brakeAt-900e3, time.Millisecond, true, "matched (+900µs)")
	f(brakeAt+500e3, 100*time.Microsecond, false, "+ hard_brake hard-brake at 2025-12-02T10:06:42Z: fired, not recorded; nearest on the other side at 2025-12-02T10:06:42.0005Z (+500µs, tolerance 100µs)")
	f(brakeAt+5e9, time.Millisecond, false, "- hard_brake hard-brake at 2025-12-02T10:06:47Z")
}

func TestRulesFromFilesAndParams(t *testing.T) {
	dir := t.TempDir()
	src, err := scripts.Shipped.ReadFile("rules/hard_brake.lua")
	if err != nil {
		t.Fatal(err)
	}
	// a copy under another name, declaring a different rule name
	os.WriteFile(filepath.Join(dir, "brake2.lua"), bytes.Replace(src, []byte(`param("name", "hard_brake")`), []byte(`param("name", "brake2")`), 1), 0o644)
	os.WriteFile(filepath.Join(dir, "hard_brake.lua"), src, 0o644)
	dump := brakeDump(t, t0+200*10e6)
	res, err := RunRules([]string{dump}, []string{dir}, RulesOptions{RuleParams: map[string]map[string]string{"brake2": {"decel": "9"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Rules, ",") != "brake2,hard_brake" || len(res.Fired) != 1 || res.Fired[0].Rule != "hard_brake" {
		t.Fatalf("rules %v fired %+v: want brake2 (decel 9, silent) and hard_brake firing", res.Rules, res.Fired)
	}
	res, err = RunRules([]string{dump}, []string{filepath.Join(dir, "brake2.lua")}, RulesOptions{})
	if err != nil || len(res.Fired) != 1 || res.Fired[0].Rule != "brake2" {
		t.Fatalf("single file: %v %+v", err, res)
	}
	c := CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond)
	if c.OK() || len(c.Unexpected) != 1 || len(c.Unchecked) != 2 {
		t.Errorf("brake2 is not the recorded rule: %+v", c)
	}
}

func TestRulesBadInput(t *testing.T) {
	dump := brakeDump(t, t0)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.lua")
	os.WriteFile(bad, []byte("rule { name = \n"), 0o644)
	empty := t.TempDir()
	f := func(specs []string, dumps []string, want error, has string) {
		t.Helper()
		_, err := RunRules(dumps, specs, RulesOptions{})
		if err == nil || (want != nil && !errors.Is(err, want)) || !strings.Contains(err.Error(), has) {
			t.Errorf("RunRules(%v, %v): %v, want %v containing %q", dumps, specs, err, want, has)
		}
	}
	f([]string{"builtin:nope"}, []string{dump}, scripts.ErrNoRule, "nope")
	f([]string{bad}, []string{dump}, scripts.ErrSyntax, "bad.lua")
	f([]string{filepath.Join(dir, "missing.lua")}, []string{dump}, os.ErrNotExist, "missing.lua")
	f([]string{empty}, []string{dump}, ErrOptions, "no .lua")
	f(nil, []string{dump}, ErrOptions, "no rules")
	f([]string{"builtin:hard_brake", "builtin:hard_brake"}, []string{dump}, scripts.ErrDeclaration, "already loaded")
	f([]string{"builtin:hard_brake"}, []string{filepath.Join(dir, "nodump.pack")}, os.ErrNotExist, "nodump.pack")
}
