package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/scripts"
)

const t0 = int64(1_764_670_000_000_000_000)

// brakeDump writes a speed signal braking at 8 m/s^2 from +2s, with the
// trigger the live hard_brake rule recorded (at the first braking sample,
// moved to recordedAt) and one trigger from another source.
func brakeDump(t *testing.T, recordedAt int64) string {
	live := liveTrigger(t, speedDump(t0, 500, 8), nil)
	live.TimeNs = recordedAt
	info := &dumpinfo.Info{Triggers: []dumpinfo.Trigger{live, {ID: 8, Reason: "manual", Source: "api", TimeNs: t0 + 1e9}}}
	return writeDump(t, "brake.pack", speedDump(t0, 500, 8), info)
}

// liveTrigger is the trigger a live recorder running builtin:hard_brake with
// params would record over msgs: the rules run through the same
// scripts.Host, and the dump pipeline records the trigger's fields as the
// rule gave them (dump.TriggerParams.record).
func liveTrigger(t *testing.T, msgs []rec, params map[string]string) dumpinfo.Trigger {
	t.Helper()
	res, err := RunRules([]string{writeDump(t, "live.pack", msgs, nil)}, []string{"builtin:hard_brake"}, RulesOptions{Params: params})
	if err != nil || len(res.Fired) != 1 {
		t.Fatalf("live run: %v, fired %+v", err, res)
	}
	f := res.Fired[0]
	return f.Record(7, dumpinfo.SourceLua)
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

// TestCompareFields: a trigger fired at the recorded time still fails when
// its tag, severity, windows or params differ; numbers in tags and params
// compare as numbers.
func TestCompareFields(t *testing.T) {
	rec := Trigger{Rule: "hard_brake", Reason: "hard-brake", TimeNs: t0, Time: fmtNs(t0), PreNs: new(int64(3e9)), PostNs: new(int64(2e9)), Tag: "8.0 m/s^2 from 20.0 to 19.9 m/s",
		Severity: 2, Params: map[string]string{"decel": "6", "pre": "3s", "post": "2s"}, Source: "lua in x.pack"}
	f := func(change func(*Trigger), want string) {
		t.Helper()
		fired := rec
		fired.Params = map[string]string{}
		for k, v := range rec.Params {
			fired.Params[k] = v
		}
		change(&fired)
		c := CompareTriggers([]Trigger{fired}, []Trigger{rec}, []string{"hard_brake"}, time.Millisecond)
		var d bytes.Buffer
		c.WriteDiff(&d, []Trigger{fired}, []Trigger{rec})
		if want == "" {
			if !c.OK() || len(c.Matched) != 1 {
				t.Errorf("want a match:\n%s", d.String())
			}
			return
		}
		if c.OK() || len(c.Changed) != 1 || !strings.Contains(d.String(), want) {
			t.Errorf("want a change naming %q:\n%s", want, d.String())
		}
	}
	f(func(*Trigger) {}, "")
	f(func(x *Trigger) {
		x.TimeNs += 500e3
		x.Params["decel"] = "6.0"
		x.Tag = "8.00 m/s^2 from 20 to 19.90 m/s"
	}, "")
	f(func(x *Trigger) { x.Params["pre"] = "3000ms" }, "")
	f(func(x *Trigger) {
		x.PreNs, x.PostNs, x.Params["pre"], x.Params["post"] = new(int64(15e9)), new(int64(5e9)), "15s", "5s"
	},
		`! hard_brake hard-brake at 2025-12-02T10:06:40Z (lua in x.pack): fired (0s) but differs: pre 3s recorded, 15s fired; post 2s recorded, 5s fired; params.post "2s" recorded, "5s" fired; params.pre "3s" recorded, "15s" fired`)
	f(func(x *Trigger) { x.Tag = "8.1 m/s^2 from 20.0 to 19.9 m/s" }, `tag "8.0 m/s^2 from 20.0 to 19.9 m/s" recorded, "8.1 m/s^2 from 20.0 to 19.9 m/s" fired`)
	f(func(x *Trigger) { x.Tag = "8.0 km/h from 20.0 to 19.9 m/s" }, "tag ")
	f(func(x *Trigger) { x.Severity = 1 }, "severity 2 recorded, 1 fired")
	f(func(x *Trigger) { x.Params["decel"] = "6.5" }, `params.decel "6" recorded, "6.5" fired`)
	f(func(x *Trigger) { delete(x.Params, "decel"); x.Params["k"] = "v" }, `params.decel "6" recorded, (absent) fired; params.k (absent) recorded, "v" fired`)
	f(func(x *Trigger) { x.PreNs = nil }, "pre 3s recorded, unset (the recorder's window) fired")
	f(func(x *Trigger) { x.PostNs = new(int64(0)) }, "post 2s recorded, 0s fired")
	// a looser value tolerance accepts a small change of a number
	fired := rec
	fired.Tag = "8.0001 m/s^2 from 20.0 to 19.9 m/s"
	if c := Compare([]Trigger{fired}, []Trigger{rec}, []string{"hard_brake"}, CompareOptions{Time: time.Millisecond, Value: 1e-3}); !c.OK() {
		t.Errorf("value tolerance 1e-3: %+v", c)
	}
	if c := CompareTriggers([]Trigger{fired}, []Trigger{rec}, []string{"hard_brake"}, time.Millisecond); c.OK() {
		t.Errorf("default value tolerance accepted %q", fired.Tag)
	}
}

func TestSameText(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"", "", true}, {"6", "6.0", true}, {"6", "6.5", false}, {"1e3", "1000", true}, {"a1b", "a1b", true},
		{"a1b", "a1c", false}, {"a1", "a1 2", false}, {"3s", "3000ms", true}, {"3s", "4s", false}, {"x", "y", false},
		{"-0.5 to +0.5", "-.5 to 0.5", true},
	} {
		if got := sameText(c.a, c.b, DefaultValueTolerance); got != c.same {
			t.Errorf("sameText(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestRecordedTriggers(t *testing.T) {
	dump := brakeDump(t, t0+200*10e6)
	ts, err := RecordedTriggers([]string{dump, dump})
	if err != nil || len(ts) != 2 || ts[0].Reason != "manual" || ts[1].Rule != "hard_brake" || ts[1].Severity != 2 {
		t.Fatalf("%v %+v", err, ts)
	}
	if _, err := RecordedTriggers(nil); !errors.Is(err, ErrOptions) {
		t.Errorf("no dumps: %v", err)
	}
	if _, err := RecordedTriggers([]string{filepath.Join(t.TempDir(), "none.pack")}); err == nil {
		t.Error("a missing dump gave no error")
	}
}

// TestRulesSilent: a rule reading topics that received no message is
// named with what it reads and what the dumps hold: topics absent, or
// held with no message; a rule of on_tick alone only when the dumps hold
// no message at all.
func TestRulesSilent(t *testing.T) {
	res := &RulesResult{Messages: 30, reads: []bool{true, true, false, true},
		Status: []scripts.RuleStatus{
			{Name: "speed", Topics: []string{"vehicle/speed"}},
			{Name: "imu", Topics: []string{"vehicle/*"}, Messages: 30},
			{Name: "ticker"},
			{Name: "cam", Topics: []string{"camera/**"}},
		},
		Held: []HeldTopic{{"camera/front", 0}, {"vehicle/imu", 30}}}
	got := res.Silent()
	want := []string{
		"rule speed received no message: it reads vehicle/speed, which the dumps do not hold (they hold camera/front (0), vehicle/imu (30))",
		"rule cam received no message: it reads camera/**, whose topics in the dumps hold no message (they hold camera/front (0), vehicle/imu (30))",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	res.Messages = 0
	if got := res.Silent(); len(got) != 4 || !strings.Contains(got[2], "rule ticker received no message: the dumps hold none") {
		t.Errorf("no message at all: %q", got)
	}
}
