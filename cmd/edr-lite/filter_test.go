package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// catMsg is one line of cat --jsonl --payload base64.
type catMsg struct {
	Topic string `json:"topic"`
	TS    int64  `json:"ts"`
	Time  string `json:"time"`
	GenTS int64  `json:"gen_ts"`
	Size  int    `json:"size"`
	Data  []byte `json:"data"`
}

// catAll reads every message of a dump through the built binary.
func catAll(t *testing.T, path string, args ...string) []catMsg {
	t.Helper()
	code, out, errs := runBin(t, append([]string{"cat", path, "--jsonl", "--payload", "base64"}, args...)...)
	if code != 0 {
		t.Fatalf("cat %s: exit %d: %s", path, code, errs)
	}
	var msgs []catMsg
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m catMsg
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("cat line %q: %v", l, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// key spells a message for comparing sets (producer time left out: MCAP
// has no "unknown" publish_time, so a message without one reads back with
// its capture time there).
func (m catMsg) key() string { return fmt.Sprintf("%s|%d|%x", m.Topic, m.TS, m.Data) }

func keys(ms []catMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.key())
	}
	slices.Sort(out)
	return out
}

// cutInfo is what info --json says of a cut.
type cutInfo struct {
	Messages uint64 `json:"messages"`
	StartNs  int64  `json:"start_ns"`
	EndNs    int64  `json:"end_ns"`
	Writer   string `json:"writer"`
	Topics   []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Messages uint64 `json:"messages"`
		Cut      uint64 `json:"cut"`
	} `json:"topics"`
	Triggers []struct {
		ID     uint64 `json:"id"`
		TimeNs int64  `json:"time_ns"`
	} `json:"triggers"`
	Cut *struct {
		Of              []string `json:"of"`
		FromNs          int64    `json:"from_ns"`
		ToNs            int64    `json:"to_ns"`
		From            string   `json:"from"`
		Topics          []string `json:"topics"`
		Exclude         []string `json:"exclude"`
		AroundTrigger   uint64   `json:"around_trigger"`
		Part            int      `json:"part"`
		Messages        uint64   `json:"messages"`
		DroppedTopics   []string `json:"dropped_topics"`
		DroppedTriggers int      `json:"dropped_triggers"`
	} `json:"cut"`
}

func readCut(t *testing.T, path string) cutInfo {
	t.Helper()
	code, out, errs := runBin(t, "info", "--json", path)
	if code != 0 {
		t.Fatalf("info %s: %s", path, errs)
	}
	var ci cutInfo
	if err := json.Unmarshal([]byte(out), &ci); err != nil {
		t.Fatal(err)
	}
	return ci
}

func mustVerify(t *testing.T, path string) {
	t.Helper()
	if code, out, errs := runBin(t, "verify", path); code != 0 {
		t.Fatalf("verify %s: exit %d\n%s%s", path, code, out, errs)
	}
}

// TestFilterIsSubsetOfCat: for pack and MCAP inputs and outputs, and each
// kind of selection, the filtered file verifies, and its messages are
// exactly those of cat of the input that the selection keeps (computed
// here, not by the parser under test); its dump information says it is a
// cut of the input, with the window and what was left out.
func TestFilterIsSubsetOfCat(t *testing.T) {
	dir := t.TempDir()
	pk := writeTestDump(t, dir, "in.pack")
	mc := filepath.Join(dir, "in.mcap")
	if code, _, errs := runBin(t, "export", "--format", "mcap", pk, "-o", mc, "--compression", "zstd"); code != 0 {
		t.Fatal(errs)
	}
	all := catAll(t, pk)
	if len(all) != 110 {
		t.Fatalf("input holds %d messages", len(all))
	}
	cases := []struct {
		name string
		args []string
		keep func(m catMsg) bool
		// expectations on the cut record
		from, to int64
		dropped  []string
	}{
		{"topics", []string{"--topics", "camera/*"}, func(m catMsg) bool { return m.Topic == "camera/front" },
			t0, t0 + 1e9, []string{"vehicle/speed"}},
		{"exclude", []string{"--exclude", "camera/*"}, func(m catMsg) bool { return m.Topic != "camera/front" },
			t0, t0 + 1e9, []string{"camera/front"}},
		{"offsets", []string{"--from", "200ms", "--to", "450ms"}, func(m catMsg) bool { return m.TS >= t0+200e6 && m.TS <= t0+450e6 },
			t0 + 200e6, t0 + 450e6, nil},
		{"rfc3339", []string{"--from", "2025-12-02T10:06:40.3Z", "--to", fmt.Sprint(t0 + 305e6), "--topics", "vehicle/speed"},
			func(m catMsg) bool { return m.Topic == "vehicle/speed" && m.TS >= t0+300e6 && m.TS <= t0+305e6 },
			t0 + 300e6, t0 + 305e6, []string{"camera/front"}},
		{"around-trigger", []string{"--around-trigger", "1", "--pre", "100ms", "--post", "50ms"},
			func(m catMsg) bool { return m.TS >= t0+400e6 && m.TS <= t0+550e6 }, t0 + 400e6, t0 + 550e6, nil},
		{"around-trigger-own-windows", []string{"--around-trigger", "1"}, func(catMsg) bool { return true }, t0, t0 + 1e9, nil},
	}
	for _, in := range []string{pk, mc} {
		for _, ext := range []string{".pack", ".mcap"} {
			for _, tc := range cases {
				name := fmt.Sprintf("%s-to-%s-%s", filepath.Ext(in)[1:], ext[1:], tc.name)
				t.Run(name, func(t *testing.T) {
					out := filepath.Join(dir, name+ext)
					code, stdout, errs := runBin(t, append([]string{"filter", in, "-o", out}, tc.args...)...)
					if code != 0 {
						t.Fatalf("filter: exit %d\n%s%s", code, stdout, errs)
					}
					mustVerify(t, out)
					var want []catMsg
					for _, m := range all {
						if tc.keep(m) {
							want = append(want, m)
						}
					}
					got := catAll(t, out)
					if !slices.Equal(keys(got), keys(want)) {
						t.Fatalf("filter kept %d messages, cat subset has %d", len(got), len(want))
					}
					for i := 1; i < len(got); i++ {
						if got[i].TS < got[i-1].TS {
							t.Fatalf("message %d goes back in time", i)
						}
					}
					ci := readCut(t, out)
					if ci.Cut == nil {
						t.Fatal("no cut record")
					}
					c := ci.Cut
					if !slices.Equal(c.Of, []string{filepath.Base(in)}) || c.FromNs != tc.from || c.ToNs != tc.to ||
						c.Messages != uint64(len(all)-len(want)) || !slices.Equal(c.DroppedTopics, tc.dropped) {
						t.Errorf("cut = %+v", *c)
					}
					if ci.Writer != "edr-lite filter" || ci.Messages != uint64(len(want)) || ci.StartNs != tc.from || ci.EndNs != tc.to {
						t.Errorf("info: writer %q, %d messages, %d..%d", ci.Writer, ci.Messages, ci.StartNs, ci.EndNs)
					}
					var sum uint64
					for _, tp := range ci.Topics {
						sum += tp.Messages + tp.Cut
						if tp.Name == "vehicle/speed" && tp.Type != "f32" {
							t.Errorf("speed lost its type: %+v", tp)
						}
					}
					if len(c.DroppedTopics) == 0 && sum != 110 {
						t.Errorf("per topic kept + cut = %d, want 110", sum)
					}
					trig := t0+500e6 >= tc.from && t0+500e6 <= tc.to
					if trig != (len(ci.Triggers) == 1) || trig == (c.DroppedTriggers == 1) {
						t.Errorf("triggers %+v, dropped %d", ci.Triggers, c.DroppedTriggers)
					}
					if strings.Contains(strings.Join(tc.args, " "), "around-trigger") && c.AroundTrigger != 1 {
						t.Errorf("around_trigger = %d", c.AroundTrigger)
					}
				})
			}
		}
	}
}

// TestSplit: split by duration and by size makes files that verify, whose
// messages together are the input's, in order, each a numbered cut.
func TestSplit(t *testing.T) {
	dir := t.TempDir()
	pk := writeTestDump(t, dir, "in.pack")
	all := catAll(t, pk)
	for _, tc := range []struct {
		name  string
		args  []string
		parts int
	}{
		{"duration", []string{"--duration", "300ms"}, 4},
		{"size", []string{"--size", "4KiB", "--format", "mcap"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".pack")
			code, stdout, errs := runBin(t, append([]string{"split", pk, "-o", out}, tc.args...)...)
			if code != 0 {
				t.Fatalf("split: %d\n%s%s", code, stdout, errs)
			}
			files, _ := filepath.Glob(filepath.Join(dir, tc.name+"_*.pack"))
			if tc.parts != 0 && len(files) != tc.parts || len(files) < 2 {
				t.Fatalf("split made %v\n%s", files, stdout)
			}
			var got []catMsg
			for i, f := range files {
				if filepath.Base(f) != filepath.Base(fmt.Sprintf("%s_%04d.pack", tc.name, i+1)) {
					t.Errorf("file %d is %s", i+1, f)
				}
				mustVerify(t, f)
				part := catAll(t, f)
				ci := readCut(t, f)
				if ci.Cut == nil || ci.Cut.Part != i+1 || ci.Cut.Messages != uint64(len(all)-len(part)) {
					t.Errorf("%s: cut %+v", f, ci.Cut)
				}
				if tc.name == "duration" && (ci.Cut.FromNs != t0+int64(i)*300e6 || ci.Cut.ToNs != min(t0+int64(i+1)*300e6-1, t0+1e9)) {
					t.Errorf("%s: window %d..%d", f, ci.Cut.FromNs-t0, ci.Cut.ToNs-t0)
				}
				got = append(got, part...)
			}
			if len(got) != len(all) {
				t.Fatalf("parts hold %d messages, input %d", len(got), len(all))
			}
			for i := range got {
				if got[i].key() != all[i].key() {
					t.Fatalf("message %d: %s, input %s", i, got[i].key(), all[i].key())
				}
			}
		})
	}
}

// TestSelectionErrors: every reading verb says what the input holds when a
// selection matches nothing (exit 1) and refuses --from after --to (exit
// 2), with the same words.
func TestSelectionErrors(t *testing.T) {
	dir := t.TempDir()
	pk := writeTestDump(t, dir, "in.pack")
	out := func(n string) string { return filepath.Join(dir, n) }
	verbs := map[string][]string{
		"cat":    {"cat", pk},
		"export": {"export", pk, "-o", out("x.jsonl")},
		"merge":  {"merge", pk, "-o", out("m.pack")},
		"filter": {"filter", pk, "-o", out("f.pack")},
		"split":  {"split", pk, "-o", out("s.pack"), "--duration", "1s"},
		"replay": {"replay", pk, "-o", "discard", "--asfast"},
		"report": {"report", pk, "-o", out("r.html")},
	}
	for name, base := range verbs {
		f := func(want int, has []string, args ...string) {
			t.Helper()
			code, _, errs := runBin(t, append(slices.Clone(base), args...)...)
			for _, h := range has {
				if !strings.Contains(errs, h) {
					t.Errorf("%s %v: stderr %q lacks %q", name, args, errs, h)
				}
			}
			if code != want {
				t.Errorf("%s %v: exit %d, want %d (%s)", name, args, code, want, errs)
			}
		}
		holds := []string{"matches no topic", "holds camera/front, vehicle/speed"}
		f(1, holds, "--topics", "lidar/*")
		f(1, []string{"--exclude 'vehicle/*,camera/*' leaves no topic", "holds camera/front, vehicle/speed"}, "--exclude", "vehicle/*,camera/*")
		f(1, []string{"selects nothing", "holds messages from 2025-12-02T10:06:40.000000000Z to 2025-12-02T10:06:41.000000000Z"}, "--from", "5s")
		f(1, []string{"no message of camera/front lies within --from 2025-12-02T10:06:40.010000000Z --to 2025-12-02T10:06:40.020000000Z"},
			"--topics", "camera/front", "--from", "10ms", "--to", "20ms")
		f(2, []string{"--from 2s is after --to 1s"}, "--from", "2s", "--to", "1s")
		f(2, []string{"--to: time \"soon\""}, "--to", "soon")
		for _, leak := range []string{"dumpfile:", "filter:", "units:"} {
			code, _, errs := runBin(t, append(slices.Clone(base), "--topics", "lidar/*")...)
			if code == 0 || strings.Contains(errs, ": "+leak) {
				t.Errorf("%s: error names package %s: %q", name, leak, errs)
			}
		}
	}
	if files, _ := filepath.Glob(out("*")); len(files) != 1 {
		t.Errorf("a failed selection left files: %v", files)
	}
}

// TestExportAndMergeSelection: export (JSON lines, MCAP) and merge keep
// exactly the selection, as a cut.
func TestExportAndMergeSelection(t *testing.T) {
	dir := t.TempDir()
	a := writeTestDump(t, dir, "a.pack")
	b := writeTestDump(t, dir, "b.pack")
	sel := []string{"--topics", "vehicle/speed", "--from", "100ms", "--to", "199ms"}
	jl := filepath.Join(dir, "cut.jsonl")
	if code, o, errs := runBin(t, append([]string{"export", a, "-o", jl}, sel...)...); code != 0 {
		t.Fatalf("export: %s%s", o, errs)
	}
	back := filepath.Join(dir, "back.pack")
	if code, o, errs := runBin(t, "import", jl, "-o", back); code != 0 {
		t.Fatalf("import: %s%s", o, errs)
	}
	if got := catAll(t, back); len(got) != 10 || got[0].TS != t0+100e6 || got[9].TS != t0+190e6 {
		t.Errorf("jsonl export of the selection holds %d messages", len(got))
	}
	if ci := readCut(t, back); ci.Cut == nil || ci.Cut.Messages != 100 {
		t.Errorf("jsonl export: cut %+v", ci.Cut)
	}
	code, o, _ := runBin(t, append([]string{"export", "--format", "mcap", a, "-o", "-"}, sel...)...)
	if code != 0 || !strings.HasPrefix(o, "\x89MCAP") {
		t.Errorf("mcap export to stdout: exit %d, %q...", code, o[:min(len(o), 8)])
	}
	m := filepath.Join(dir, "ab.mcap")
	code, o, errs := runBin(t, append([]string{"merge", a, b, "-o", m}, sel...)...)
	if code != 0 || !strings.Contains(o, "20 messages") {
		t.Fatalf("merge: %s%s", o, errs)
	}
	mustVerify(t, m)
	if ci := readCut(t, m); ci.Cut == nil || !slices.Equal(ci.Cut.Of, []string{"a.pack", "b.pack"}) || ci.Cut.Messages != 200 {
		t.Errorf("merge cut %+v", ci.Cut)
	}
}

// TestGoldenCut pins what filter, split and merge print, info of a cut
// (text and JSON), and cat's text and JSON lines.
func TestGoldenCut(t *testing.T) {
	dir := t.TempDir()
	pk := writeTestDump(t, dir, "in.pack")
	run := func(golden string, args ...string) {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%v: code %d, stderr %q", args, code, errs)
		}
		checkGolden(t, golden, scrubDir(out, dir))
	}
	cut := filepath.Join(dir, "brake.pack")
	run("filter.txt", "filter", pk, "-o", cut, "--around-trigger", "1", "--pre", "100ms", "--post", "50ms", "--exclude", "camera/*")
	run("info-cut.txt", "info", cut)
	run("info-cut.json", "info", "--json", cut)
	run("split.txt", "split", pk, "-o", filepath.Join(dir, "part.mcap"), "--duration", "400ms", "--topics", "camera/*")
	run("merge-cut.txt", "merge", pk, cut, "-o", filepath.Join(dir, "m.pack"), "--from", "450ms", "--to", "460ms")
	run("cat.txt", "cat", pk, "--limit", "3", "--from", "90ms")
	run("cat-jsonl.txt", "cat", pk, "--jsonl", "--limit", "3", "--from", "90ms", "--payload", "base64")
	run("cat-jsonl-hex.txt", "cat", pk, "--jsonl", "--limit", "3", "--from", "90ms", "--payload", "hex")
}

// TestReplaySelection: replay takes the selection flags: it replays
// exactly the messages the selection keeps (counted by the summary), with
// -o naming the output.
func TestReplaySelection(t *testing.T) {
	dir := t.TempDir()
	pk := writeTestDump(t, dir, "in.pack")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--topics", "vehicle/speed", "--from", "100ms", "--to", "199ms"}, 10},
		{[]string{"--exclude", "vehicle/*"}, 10},
		{[]string{"--from", "2025-12-02T10:06:40.95Z"}, 5},
		{[]string{"--to", fmt.Sprint(t0 + 50e6)}, 7},
	} {
		code, out, errs := runBin(t, append([]string{"replay", pk, "-o", "discard", "--asfast"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d messages", tc.want)) {
			t.Errorf("replay %v: exit %d, want %d messages\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
	// the output as --to named it before -o
	code, out, errs := runBin(t, "replay", pk, "--to", "discard", "--asfast")
	if code != 0 || !strings.Contains(out, "replayed 110 messages") || !strings.Contains(errs, "it is -o discard now") {
		t.Errorf("replay --to discard: exit %d\n%s%s", code, out, errs)
	}
}
