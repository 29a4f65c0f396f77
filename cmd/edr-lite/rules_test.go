package main

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// writeBrakeDump writes 5s of a 100 Hz speed signal (f32le m/s) braking at
// 8 m/s^2 from +2s, with the trigger hard_brake recorded live.
func writeBrakeDump(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "brake.pack")
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
	w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{
		{ID: 1, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", TimeNs: t0 + 2e9, PreNs: 15e9, PostNs: 5e9}}})
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
	f(exitUsage, "--tolerance", "test", "--rules", "builtin:hard_brake", "--tolerance", "soon", dump)
	f(exitUsage, "--param", "test", "--rules", "builtin:hard_brake", "--param", "nothing", dump)
	f(exitUsage, "unknown rules action", "check", dump)
	f(exitFail, "no shipped rule", "test", "--rules", "builtin:nope", dump)
	f(exitFail, "no such file", "test", "--rules", "builtin:hard_brake", dump+".missing")
}
