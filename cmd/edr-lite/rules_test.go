package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/replay"
)

// writeBrakeDump writes 5s of a 100 Hz speed signal (f32le m/s) braking at
// 8 m/s^2 from +2s, with the trigger hard_brake recorded live with its
// defaults (the trigger is what the rule fires over the same data: see
// liveTriggers).
func writeBrakeDump(t *testing.T, dir string) string {
	t.Helper()
	plain := writeSpeedDump(t, dir, "plain.pack", nil)
	return writeSpeedDump(t, dir, "brake.pack", liveTriggers(t, plain))
}

// liveTriggers are the triggers a live recorder running builtin:hard_brake
// with params records over dump: the rule runs through the same
// scripts.Host in rules test, and the dump pipeline records each trigger's
// fields as the rule gives them.
func liveTriggers(t *testing.T, dump string, params ...string) []dumpinfo.Trigger {
	t.Helper()
	args := []string{"rules", "test", "--rules", "builtin:hard_brake", "--mode", "input-only", dump}
	for _, p := range params {
		args = append(args, "--param", p)
	}
	code, out, errs := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("%v: %d %s", args, code, errs)
	}
	var ts []dumpinfo.Trigger
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f replay.Trigger
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, f.Record(uint64(i+1), dumpinfo.SourceLua))
	}
	return ts
}

// writeSpeedDump writes the braking speed signal with the given recorded
// triggers.
func writeSpeedDump(t *testing.T, dir, name string, triggers []dumpinfo.Trigger) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	v := 20.0
	for i := 0; i < 500; i++ {
		if i >= 200 {
			v = math.Max(0, v-0.08)
		}
		b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(v)))
		ts := t0 + int64(i)*10e6
		if err := w.Add("vehicle/speed", "", nil, ts, ts, b); err != nil {
			t.Fatal(err)
		}
	}
	if triggers != nil {
		w.SetDumpInfo(dumpinfo.Info{Triggers: triggers})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRulesTest(t *testing.T) {
	dump := writeBrakeDump(t, t.TempDir())
	code, out, errs := runCLI(t, "rules", "test", "--rules", "builtin:hard_brake", dump)
	if code != exitOK || !strings.Contains(out, "ok: 1 trigger(s) match") {
		t.Fatalf("full: code %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runCLI(t, "rules", "test", "--rules", "builtin:hard_brake", "--param", "hard_brake.decel=9", dump)
	if code != exitFail || !strings.Contains(out, "- hard_brake hard-brake at 2025-12-02T10:06:42Z") || !strings.Contains(out, "FAIL: 1 recorded trigger(s) not fired") {
		t.Fatalf("decel=9: code %d, stdout %q", code, out)
	}
	code, a, _ := runCLI(t, "rules", "test", "--rules", "builtin:hard_brake", "--mode", "input-only", dump)
	_, b, _ := runCLI(t, "rules", "test", "--mode", "input-only", "--rules", "builtin:hard_brake", dump)
	if code != exitOK || a != b || strings.Count(a, "\n") != 1 || !strings.HasPrefix(a, `{"rule":"hard_brake","reason":"hard-brake","time_ns":1764670002000000000,`) {
		t.Fatalf("input-only: code %d, runs\n%s\n%s", code, a, b)
	}
	if code, out, _ := runCLI(t, "rules", "list"); code != exitOK || !strings.Contains(out, "builtin:hard_brake\n") {
		t.Errorf("list: code %d, %q", code, out)
	}
}

func TestRulesUsage(t *testing.T) {
	dump := writeBrakeDump(t, t.TempDir())
	f := func(want int, wantErr string, args ...string) {
		t.Helper()
		code, _, errs := runCLI(t, append([]string{"rules"}, args...)...)
		if code != want || !strings.Contains(errs, wantErr) {
			t.Errorf("rules %v: code %d, stderr %q; want %d and %q", args, code, errs, want, wantErr)
		}
	}
	f(exitUsage, "--rules is required", "test", dump)
	f(exitUsage, "at least one DUMP", "test", "--rules", "builtin:hard_brake")
	f(exitUsage, "--mode", "test", "--rules", "builtin:hard_brake", "--mode", "half", dump)
	f(exitUsage, "--value-tolerance", "test", "--rules", "builtin:hard_brake", "--value-tolerance", "-1", dump)
	f(exitUsage, "--tolerance", "test", "--rules", "builtin:hard_brake", "--tolerance", "soon", dump)
	f(exitUsage, "--param", "test", "--rules", "builtin:hard_brake", "--param", "nothing", dump)
	f(exitUsage, "unknown rules action", "check", dump)
	f(exitFail, "no shipped rule", "test", "--rules", "builtin:nope", dump)
	f(exitFail, "no such file", "test", "--rules", "builtin:hard_brake", dump+".missing")
}

// TestRulesTestWindowsAndTags is issue 22's acceptance through the binary:
// a dump recorded by hard_brake with pre=3s post=2s does not match the rule
// fired again without them (the recorder's windows), matches with the recorded
// windows, and fails when the recorded tag differs. output-only prints the
// recorded triggers in the form of input-only.
func TestRulesTestWindowsAndTags(t *testing.T) {
	dir := t.TempDir()
	plain := writeSpeedDump(t, dir, "plain.pack", nil)
	live := liveTriggers(t, plain, "pre=3s", "post=2s")
	if len(live) != 1 || live[0].PreNs != 3e9 || !live[0].PreSet || live[0].Tag == "" || live[0].Severity != 2 {
		t.Fatalf("live trigger %+v", live)
	}
	dump := writeSpeedDump(t, dir, "3s2s.pack", live)
	code, out, errs := runBin(t, "rules", "test", "--rules", "builtin:hard_brake", dump)
	if code != 1 || !strings.Contains(out, "! hard_brake hard-brake at 2025-12-02T10:06:42Z (lua in "+dump+"): fired (0s) but differs: pre 3s recorded, unset (the recorder's window) fired; post 2s recorded, unset (the recorder's window) fired; params.post \"2s\" recorded, (absent) fired; params.pre \"3s\" recorded, (absent) fired") ||
		!strings.Contains(out, "FAIL: 0 recorded trigger(s) not fired, 0 fired trigger(s) not recorded, 1 fired with other fields") {
		t.Fatalf("defaults against 3s/2s: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runBin(t, "rules", "test", "--rules", "builtin:hard_brake", "--param", "pre=3s", "--param", "post=2000ms", dump)
	if code != 0 || !strings.Contains(out, "ok: 1 trigger(s) match") {
		t.Fatalf("matching windows: exit %d\n%s%s", code, out, errs)
	}
	live[0].Tag += " (wet road)"
	tagged := writeSpeedDump(t, dir, "tag.pack", live)
	code, out, _ = runBin(t, "rules", "test", "--rules", "builtin:hard_brake", "--param", "pre=3s", "--param", "post=2s", tagged)
	if code != 1 || !strings.Contains(out, "but differs: tag \"8.0 m/s^2 from 20.0 to 19.9 m/s (wet road)\" recorded, \"8.0 m/s^2 from 20.0 to 19.9 m/s\" fired") {
		t.Fatalf("tag: exit %d\n%s", code, out)
	}
	code, rec, errs := runBin(t, "rules", "test", "--mode", "output-only", dump)
	_, fired, _ := runBin(t, "rules", "test", "--mode", "input-only", "--rules", "builtin:hard_brake", "--param", "pre=3s", "--param", "post=2s", dump)
	if code != 0 || rec != fired || strings.Count(rec, "\n") != 1 {
		t.Fatalf("output-only: exit %d %s\n%s\nwant the fired form\n%s", code, errs, rec, fired)
	}
}
