package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/replay"
	"github.com/edr-lite/edr-lite/scripts"
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

// writeTopicDump writes n messages of 4 bytes on topic, 10 ms apart, with
// no recorded trigger.
func writeTopicDump(t *testing.T, dir, name, topic string, n int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ts := t0 + int64(i)*10e6
		if err := w.Add(topic, "", nil, ts, ts, []byte{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRulesTestSilentRuleFails is issue 30 item 12 through the binary: a
// rule whose topics the dump does not hold (or a dump of no message) fails
// the test, in full and input-only mode, naming what the rule reads and
// what the dump holds; --allow-empty passes with a note. Before, "ok: 0
// trigger(s) match" and exit 0.
func TestRulesTestSilentRuleFails(t *testing.T) {
	dir := t.TempDir()
	imu := writeTopicDump(t, dir, "imu.pack", "vehicle/imu", 30)
	for _, mode := range []string{"full", "input-only"} {
		code, out, errs := runBin(t, "rules", "test", "--mode", mode, "--rules", "builtin:hard_brake", imu)
		if code != exitFail || strings.Contains(out, "ok:") ||
			!strings.Contains(errs, "rule hard_brake received no message: it reads vehicle/speed, which the dumps do not hold (they hold vehicle/imu (30))") ||
			!strings.Contains(errs, "--allow-empty") {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", mode, code, out, errs)
		}
	}
	code, out, errs := runBin(t, "rules", "test", "--allow-empty", "--rules", "builtin:hard_brake", imu)
	if code != exitOK || !strings.Contains(out, "ok: 0 trigger(s) match") || !strings.Contains(errs, "note: rule hard_brake received no message") {
		t.Errorf("--allow-empty: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	// a rule reading a topic the dump holds passes; one of two rules
	// silent fails the run and is the one named
	src := filepath.Join(dir, "imu_seen.lua")
	if err := os.WriteFile(src, []byte("rule{name='imu_seen', topics='vehicle/*'}\nfunction on_message(m) end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runBin(t, "rules", "test", "--rules", src, imu); code != exitOK || errs != "" {
		t.Errorf("a rule that saw messages: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = runBin(t, "rules", "test", "--rules", src, "--rules", "builtin:threshold", "--param", "threshold.topic=vehicle/spee*", "--param", "threshold.field=speed", imu)
	if code != exitFail || strings.Contains(errs, "imu_seen") || !strings.Contains(errs, "rule threshold received no message: it reads vehicle/spee*") {
		t.Errorf("two rules, one silent: exit %d\n%s", code, errs)
	}
	// a dump of no message at all
	empty := writeTopicDump(t, dir, "empty.pack", "vehicle/speed", 0)
	if code, _, errs := runBin(t, "rules", "test", "--rules", "builtin:hard_brake", empty); code != exitFail || !strings.Contains(errs, "rule hard_brake received no message") {
		t.Errorf("empty dump: exit %d\n%s", code, errs)
	}
}

// TestRulesTestBoundsTriggers is issue 32 item 12 through the binary: a
// rule giving each trigger a 1 MB reason and tag, fired 770 times, stays
// within bounded memory and output: each reason and tag is cut to the live
// recorder's bounds (scripts.MaxReason, MaxTag) and ends with the marker.
// Before, 3 GB of RSS and 1.5 GB of output.
func TestRulesTestBoundsTriggers(t *testing.T) {
	dir := t.TempDir()
	dump := writeTopicDump(t, dir, "a.pack", "a", 770)
	src := filepath.Join(dir, "big.lua")
	if err := os.WriteFile(src, []byte(`rule{name='big', topics='a'}
function on_message(m) trigger{ reason = string.rep('r', 1000000), tag = string.rep('t', 1000000) } end
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"input-only", "full"} {
		outPath := filepath.Join(dir, mode+".out")
		f, err := os.Create(outPath)
		if err != nil {
			t.Fatal(err)
		}
		r := runMeasured(t, f, "rules", "test", "--mode", mode, "--rules", src, dump)
		f.Close()
		if mode == "input-only" && r.code != 0 || mode == "full" && r.code != exitFail {
			t.Fatalf("%s: exit %d %s", mode, r.code, r.stderr)
		}
		st, err := os.Stat(outPath)
		if err != nil {
			t.Fatal(err)
		}
		rss := r.rss
		t.Logf("%s: %d bytes of output, %d MB peak RSS", mode, st.Size(), rss>>20)
		if st.Size() > 2<<20 || rss > 400<<20 {
			t.Errorf("%s: %d bytes of output, %d MB peak RSS: want at most 2 MB and 400 MB", mode, st.Size(), rss>>20)
		}
		out, err := os.ReadFile(outPath)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "full" {
			if n := strings.Count(string(out), "\n+ big rrrr"); n != 770 || !strings.Contains(string(out), "r"+scripts.Truncated+" at ") {
				t.Errorf("full: %d unexpected triggers listed, want 770:\n%.2000s", n, out)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 770 {
			t.Fatalf("%d triggers, want 770", len(lines))
		}
		var tr replay.Trigger
		if err := json.Unmarshal([]byte(lines[769]), &tr); err != nil {
			t.Fatal(err)
		}
		if len(tr.Reason) > scripts.MaxReason || !strings.HasSuffix(tr.Reason, scripts.Truncated) ||
			len(tr.Tag) > scripts.MaxTag || !strings.HasSuffix(tr.Tag, scripts.Truncated) {
			t.Errorf("trigger: reason %d bytes %q..., tag %d bytes", len(tr.Reason), tr.Reason[:10], len(tr.Tag))
		}
	}
}

// TestRulesTestMissingRuleFile: a --rules path that does not exist is
// named with the option that gave it (it said "rules: stat PATH: ..."
// before, a word of the code's).
func TestRulesTestMissingRuleFile(t *testing.T) {
	dir := t.TempDir()
	dump := writeTopicDump(t, dir, "a.pack", "a", 3)
	missing := filepath.Join(dir, "missing.lua")
	code, _, errs := runBin(t, "rules", "test", "--rules", missing, dump)
	if want := "edr-lite rules: --rules " + missing + ": no such file or directory"; code != exitFail || !strings.Contains(errs, want) {
		t.Errorf("rules test of a missing rule file: exit %d %q, want exit 1 saying %q", code, errs, want)
	}
}
