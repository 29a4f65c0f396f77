package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
)

// brakeLog has two buses: Brake and WheelSpeeds frames of the test DBC,
// a frame of an ID the DBC lacks (555), a Brake frame too short (1 byte),
// a remote request (no signals).
const brakeLog = `(1796218342.000100) can0 100#1027112700000000
(1796218342.010100) can0 101#0100000000000000
(1796218342.020100) can0 101#ABC8FF3800000007
(1796218342.030100) can0 555#01
(1796218342.035100) can0 101#R8
(1796218342.040100) can0 101#AB
(1796218342.050100) can1 101#ABC8FF3800000007
`

var testDBC = filepath.Join("..", "..", "can", "testdata", "vehicle.dbc")

// infoCAN is info --json's per-topic part this test reads.
type infoCAN struct {
	Topics []struct {
		Name     string               `json:"name"`
		Messages uint64               `json:"messages"`
		Type     string               `json:"type"`
		CAN      *dumpinfo.CANAccount `json:"can"`
	} `json:"topics"`
}

func readInfoCAN(t *testing.T, args ...string) (map[string]uint64, map[string]*dumpinfo.CANAccount) {
	t.Helper()
	code, out, errs := runBin(t, append([]string{"info", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("info --json %v: %d %s", args, code, errs)
	}
	var in infoCAN
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	msgs, accs := map[string]uint64{}, map[string]*dumpinfo.CANAccount{}
	for _, tp := range in.Topics {
		msgs[tp.Name] = tp.Messages
		if tp.CAN != nil {
			accs[tp.Name] = tp.CAN
		}
	}
	return msgs, accs
}

// reGen drops the producer time, which a log does not have and a dump
// written from it does (the frames' and their messages' alike).
var reGen = regexp.MustCompile(`"gen_ts":\d+,"gen_time":"[^"]*",`)

// TestCANDBCDumps: --dbc decodes the CAN frame topics of pack and MCAP
// dumps recorded without a DBC as it decodes a candump log (one path):
// the same messages (cat --decode, CSV), topics (info, list), accounting
// (info text and JSON: decoded, unknown and short frames with their IDs),
// triggers (rules test), exports (MCAP, JSON lines, Parquet), rewrites
// (filter, split, merge: the decoded topics and each frame topic's
// accounting in the output, which info reads without --dbc), the report
// and replay. BUS=FILE decodes that bus only; what --dbc cannot decode is
// said; the verbs where it decodes nothing do not take it.
func TestCANDBCDumps(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "brake.log")
	os.WriteFile(log, []byte(brakeLog), 0o644)
	pk, mc := filepath.Join(dir, "brake.pack"), filepath.Join(dir, "brake.mcap")
	if code, _, errs := runBin(t, "import", "--format", "candump", log, "-o", pk); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runBin(t, "export", "--format", "mcap", pk, "-o", mc); code != 0 {
		t.Fatal(errs)
	}
	inputs := []string{log, pk, mc}

	// cat --decode and CSV: the log's decoding, message for message.
	var want, wantCSV string
	for i, in := range inputs {
		code, out, errs := runBin(t, "cat", "--dbc", testDBC, "--decode", in)
		if code != 0 || errs != "" {
			t.Fatalf("cat --dbc %s: %d %s", in, code, errs)
		}
		out = reGen.ReplaceAllString(out, "")
		code, csv, errs := runBin(t, "cat", "--dbc", testDBC, "--format", "csv", "--fields", "BrakePressure,BrakeCounter", "--topics", "can/*/Brake", in)
		if code != 0 {
			t.Fatalf("cat --format csv --dbc %s: %d %s", in, code, errs)
		}
		if i == 0 {
			want, wantCSV = out, csv
			if strings.Count(out, `"topic":"can/can0/Brake"`) != 2 || strings.Count(out, `"topic":"can/can1/Brake"`) != 1 ||
				strings.Count(out, `"topic":"can/can0/WheelSpeeds"`) != 1 ||
				!strings.Contains(out, `{"topic":"can/can0/Brake","ts":1796218342020100000,"time":"2026-12-02T13:32:22.0201Z","type":"dbc.Brake","data":{"BrakePressure":274.8,"BrakePedal":1,"Decel":-0.2,"BrakeCounter":7}}`) {
				t.Fatalf("cat --dbc of the log:\n%s", out)
			}
			continue
		}
		if out != want {
			t.Errorf("cat --dbc --decode %s:\n%s\nwant (the log's)\n%s", in, out, want)
		}
		if csv != wantCSV || strings.Count(csv, "\n") != 4 {
			t.Errorf("CSV of %s:\n%s\nwant\n%s", in, csv, wantCSV)
		}
	}

	// info: the decoded topics and what the DBC made of each frame topic.
	wantAcc := dumpinfo.CANAccount{DBC: "vehicle.dbc", Decoded: 3, Unknown: 1, Short: 1, UnknownIDs: []string{"555"}, ShortIDs: []string{"101"}}
	for _, in := range inputs {
		msgs, accs := readInfoCAN(t, "--dbc", testDBC, in)
		if msgs["can/can0/Brake"] != 2 || msgs["can/can0/WheelSpeeds"] != 1 || msgs["can/can1/Brake"] != 1 || msgs["can/can0"] != 6 {
			t.Errorf("info --dbc %s: topics %v", in, msgs)
		}
		if a := accs["can/can0"]; a == nil || !equalAcc(*a, wantAcc) || accs["can/can1"] == nil || accs["can/can1"].Decoded != 1 {
			t.Errorf("info --dbc %s: accounting %+v %+v, want %+v", in, accs["can/can0"], accs["can/can1"], wantAcc)
		}
		code, out, _ := runBin(t, "info", "--dbc", testDBC, in)
		if code != 0 || !regexp.MustCompile(`can/can0\s+vehicle.dbc\s+decoded 3\s+unknown 1 \(555\)\s+short 1 \(101\)`).MatchString(out) {
			t.Errorf("info --dbc %s (text):\n%s", in, out)
		}
		code, out, _ = runBin(t, "list", "topics", "--dbc", testDBC, in)
		if code != 0 || !regexp.MustCompile(`can/can0/Brake\s+2\s+dbc.Brake`).MatchString(out) {
			t.Errorf("list topics --dbc %s:\n%s", in, out)
		}
		// rules test: the rule on the DBC signal fires at the frame that crosses.
		code, out, errs := runBin(t, "rules", "test", "--dbc", testDBC, "--rules", "builtin:threshold", "--param", "threshold.topic=can/can0/Brake",
			"--param", "threshold.path=BrakePressure", "--param", "threshold.high=200", "--mode", "input-only", in)
		if code != 0 || strings.Count(out, `"rule":"threshold"`) != 1 || !strings.Contains(out, `"time_ns":1796218342020100000`) {
			t.Errorf("rules test --dbc %s: %d\n%s\n%s", in, code, out, errs)
		}
	}
	// Without --dbc, nothing is decoded.
	if msgs, accs := readInfoCAN(t, pk); len(msgs) != 2 || len(accs) != 0 {
		t.Errorf("info without --dbc: %v %v", msgs, accs)
	}

	// Exports: the decoded topics in MCAP, JSON lines and Parquet.
	for _, in := range []string{pk, mc} {
		out := filepath.Join(dir, "export-"+filepath.Base(in)+".mcap")
		if code, _, errs := runBin(t, "export", "--dbc", testDBC, "--format", "mcap", in, "-o", out); code != 0 {
			t.Fatalf("export --dbc %s: %s", in, errs)
		}
		msgs, accs := readInfoCAN(t, out) // no --dbc: the file holds them
		if msgs["can/can0/Brake"] != 2 || accs["can/can0"] == nil || !equalAcc(*accs["can/can0"], wantAcc) {
			t.Errorf("the MCAP export of %s: %v %+v", in, msgs, accs["can/can0"])
		}
	}
	jl := filepath.Join(dir, "export.jsonl")
	if code, _, errs := runBin(t, "export", "--dbc", testDBC, "--format", "jsonl", mc, "-o", jl); code != 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(jl); strings.Count(string(b), `"topic":"can/can0/Brake","ts":`) != 2 {
		t.Errorf("the JSON lines export holds no decoded Brake messages")
	}
	back := filepath.Join(dir, "back.pack")
	if code, _, errs := runBin(t, "import", "--format", "jsonl", jl, "-o", back); code != 0 {
		t.Fatal(errs)
	}
	if msgs, accs := readInfoCAN(t, back); msgs["can/can0/Brake"] != 2 || accs["can/can0"] == nil || !equalAcc(*accs["can/can0"], wantAcc) {
		t.Errorf("the JSON lines export imported: %v %+v", msgs, accs["can/can0"])
	}
	pq := filepath.Join(dir, "parquet")
	if code, out, errs := runBin(t, "export", "--dbc", testDBC, "--format", "parquet", pk, "-o", pq); code != 0 || !strings.Contains(out, "dbc.Brake (3 rows)") {
		t.Errorf("the Parquet export: %d %s %s", code, out, errs)
	}

	// Rewrites: the output holds the decoded topics and the accounting.
	cut := filepath.Join(dir, "cut.pack")
	if code, _, errs := runBin(t, "filter", "--dbc", testDBC, "--exclude", "can/can1", pk, "-o", cut); code != 0 {
		t.Fatal(errs)
	}
	msgs, accs := readInfoCAN(t, cut)
	if msgs["can/can0/Brake"] != 2 || msgs["can/can1/Brake"] != 1 || msgs["can/can1"] != 0 || accs["can/can0"] == nil || accs["can/can0"].Unknown != 1 {
		t.Errorf("filter --dbc: %v %+v", msgs, accs)
	}
	merged := filepath.Join(dir, "merged.mcap")
	if code, _, errs := runBin(t, "merge", "--dbc", testDBC, pk, mc, "-o", merged); code != 0 {
		t.Fatal(errs)
	}
	msgs, accs = readInfoCAN(t, merged)
	if msgs["can/can0/Brake"] != 4 || accs["can/can0"] == nil || accs["can/can0"].Decoded != 6 || accs["can/can0"].Unknown != 2 ||
		len(accs["can/can0"].UnknownIDs) != 1 {
		t.Errorf("merge --dbc: %v %+v", msgs, accs["can/can0"])
	}
	parts := filepath.Join(dir, "part.pack")
	if code, _, errs := runBin(t, "split", "--dbc", testDBC, "--duration", "25ms", pk, "-o", parts); code != 0 {
		t.Fatal(errs)
	}
	if msgs, _ := readInfoCAN(t, dumpfile.PartPath(parts, 1)); msgs["can/can0/Brake"] != 2 || msgs["can/can0/WheelSpeeds"] != 1 {
		t.Errorf("split --dbc: the first part holds %v", msgs)
	}

	// The report and replay.
	rep := filepath.Join(dir, "report.json")
	if code, _, errs := runBin(t, "report", "--dbc", testDBC, "--format", "json", mc, "-o", rep); code != 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(rep); !strings.Contains(string(b), `"name":"can/can0/Brake"`) {
		t.Error("the report has no can/can0/Brake")
	}
	if code, out, errs := runBin(t, "replay", "--dbc", testDBC, pk, "-o", "discard", "--asfast"); code != 0 || !strings.Contains(out, "replayed 11 messages") {
		t.Errorf("replay --dbc: %d %s %s", code, out, errs)
	}

	// BUS=FILE: that bus only; a bus no input has is said.
	code, out, errs := runBin(t, "cat", "--dbc", "can1="+testDBC, "--decode", pk)
	if code != 0 || strings.Contains(out, "can/can0/Brake") || !strings.Contains(out, "can/can1/Brake") || errs != "" {
		t.Errorf("--dbc can1=FILE: %d %s %s", code, out, errs)
	}
	code, _, errs = runBin(t, "cat", "--dbc", "can1="+testDBC, "--dbc", "can7="+testDBC, pk)
	if code != 0 || !strings.Contains(errs, "warning: --dbc: no input has the bus can7: not decoded (the inputs' buses: can0, can1)") {
		t.Errorf("--dbc can7=FILE: %d %s", code, errs)
	}
	for _, args := range [][]string{{"--dbc", testDBC, "--dbc", testDBC}, {"--dbc", "can0=" + testDBC, "--dbc", "can0=" + testDBC}, {"--dbc", "=x"}} {
		if code, _, errs := runBin(t, append(append([]string{"cat"}, args...), pk)...); code != exitUsage || !strings.Contains(errs, "--dbc") {
			t.Errorf("cat %v: %d %s", args, code, errs)
		}
	}
	// A dump without CAN frames: said.
	plain := filepath.Join(dir, "plain.pack")
	w, err := dumpfile.Create(plain, dumpfile.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write("vehicle/speed", 1e9, 0, []byte{1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runBin(t, "cat", "--dbc", testDBC, plain)
	if code != 0 || !strings.Contains(errs, "warning: --dbc "+testDBC+" decoded nothing: no input has a CAN frame topic (edr.can.Frame, edr.can.FDFrame)") {
		t.Errorf("--dbc on a dump without frames: %d %s", code, errs)
	}
	// A dump whose frames were decoded when recorded: its message topics
	// are given as recorded, not decoded again.
	decoded := filepath.Join(dir, "decoded.pack")
	if code, _, errs := runBin(t, "import", "--dbc", testDBC, "--format", "candump", log, "-o", decoded); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs = runBin(t, "cat", "--dbc", testDBC, "--decode", "--topics", "can/can0/Brake", decoded)
	if code != 0 || strings.Count(out, "\n") != 2 ||
		!strings.Contains(errs, "warning: "+decoded+": can/can0/Brake is in the file already (decoded when it was recorded): given as recorded, not decoded again by vehicle.dbc") {
		t.Errorf("--dbc on a decoded dump: %d\n%s\n%s", code, out, errs)
	}
	// A damaged dump is summarised as far as it reads, not decoded.
	cutShort := filepath.Join(dir, "cut-short.pack")
	b, _ := os.ReadFile(pk)
	os.WriteFile(cutShort, b[:len(b)-200], 0o644)
	code, out, errs = runBin(t, "info", "--dbc", testDBC, cutShort)
	if code != exitFail || !strings.Contains(errs, "is damaged") || !strings.Contains(errs, "damaged: its CAN frames are not decoded") {
		t.Errorf("info --dbc of a damaged dump: %d\n%s\n%s", code, out, errs)
	}
	// Standard input, an import that is not a log, and the verbs that
	// decode nothing.
	if code, _, errs := runBin(t, "cat", "--dbc", testDBC, "-"); code != exitUsage || !strings.Contains(errs, "standard input") {
		t.Errorf("cat --dbc -: %d %s", code, errs)
	}
	if code, _, errs := runBin(t, "import", "--dbc", testDBC, "--format", "jsonl", jl, "-o", filepath.Join(dir, "x.pack")); code != exitUsage ||
		!strings.Contains(errs, "--dbc decodes the frames of a candump or ASC input") {
		t.Errorf("import --format jsonl --dbc: %d %s", code, errs)
	}
	for _, verb := range [][]string{{"ls", dir}, {"verify", pk}, {"recover", pk, "-o", filepath.Join(dir, "r.pack")},
		{"compress", pk, "-o", filepath.Join(dir, "c.pack"), "--compression", "lz4"}} {
		if code, _, errs := runBin(t, append(verb, "--dbc", testDBC)...); code != exitUsage || !strings.Contains(errs, "flag provided but not defined: --dbc") {
			t.Errorf("%s --dbc: %d %s", verb[0], code, errs)
		}
	}
}

func equalAcc(a, b dumpinfo.CANAccount) bool {
	return a.DBC == b.DBC && a.Decoded == b.Decoded && a.Unknown == b.Unknown && a.Short == b.Short &&
		strings.Join(a.UnknownIDs, ",") == strings.Join(b.UnknownIDs, ",") && strings.Join(a.ShortIDs, ",") == strings.Join(b.ShortIDs, ",")
}

// TestCANDBCLiveAndOffline: "edr-lite run" with a candump FIFO decoded by
// a DBC and a rule on a DBC signal. The frame that crosses the level is
// the first frame of its DBC message, whose topic appears with it: the
// rule sees it (a new topic is read from its first message) and fires at
// it. The dump's accounting says what the DBC made of the bus's frames in
// the dump (info, text and JSON). "rules test --dbc" on the dump's frames
// alone (the decoded topics cut out) fires the same trigger as live,
// which the recorded one confirms (exit 0).
func TestCANDBCLiveAndOffline(t *testing.T) {
	dbc, err := os.ReadFile(testDBC)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "can0.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "16MiB"
pre = "5s"
post = "300ms"
guard = "100ms"
[rotation]
min_free_disk = 0
[control]
socket = "$DIR/edr.sock"
[[source.can]]
candump = "`+fifo+`"
dbc = "vehicle.dbc"
[[rule]]
builtin = "threshold"
params = { topic = "can/can0/Brake", path = "BrakePressure", high = "200", reason = "hard_brake" }
`, map[string]string{"vehicle.dbc": string(dbc)}, nil)
	// the rule's first topic poll is at its start, before any CAN topic
	waitFor(t, func() bool { return len(d.rules(t)) == 1 }, "the rule")
	time.Sleep(100 * time.Millisecond)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	base := time.Now().Add(-time.Second).UnixMicro()
	line := func(us int64, frame string) string {
		return fmt.Sprintf("(%d.%06d) can0 %s\n", (base+us)/1e6, (base+us)%1e6, frame)
	}
	var b strings.Builder
	b.WriteString(line(0, "100#1027112700000000"))     // WheelSpeeds
	b.WriteString(line(100, "555#01"))                 // unknown
	b.WriteString(line(10000, "101#ABC8FF3800000007")) // the first Brake frame: 274.8 bar
	b.WriteString(line(20000, "101#0100000000000000")) // 1.6 bar
	b.WriteString(line(20100, "7FF#0102"))             // unknown
	b.WriteString(line(20200, "555#02"))               // unknown, the same ID
	b.WriteString(line(30000, "101#AB"))               // short
	b.WriteString(line(40000, "101#R8"))               // a request: no signals
	if _, err := w.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	var dumpPath string
	waitFor(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(d.dir, "dumps", "*.pack"))
		if len(m) == 1 {
			dumpPath = m[0]
		}
		return dumpPath != ""
	}, "the rule's dump")
	in := readInfoJSON(t, dumpPath)
	if len(in.Triggers) != 1 || in.Triggers[0].Reason != "hard_brake" {
		t.Fatalf("triggers %+v", in.Triggers)
	}
	liveNs := in.Triggers[0].TimeNs // capture time, as a trigger's
	code, out, _ := runBin(t, "cat", "--decode", "--topics", "can/can0/Brake", "--limit", "1", dumpPath)
	if want := fmt.Sprintf(`"ts":%d,`, liveNs); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, `"BrakePressure":274.8`) {
		t.Errorf("the live rule fired at %d, not at the first Brake frame (274.8 bar):\n%s", liveNs, out)
	}
	// The accounting: every frame of the burst is in the dump.
	msgs, accs := readInfoCAN(t, dumpPath)
	want := dumpinfo.CANAccount{DBC: "vehicle.dbc", Decoded: 3, Unknown: 3, Short: 1, UnknownIDs: []string{"555", "7FF"}, ShortIDs: []string{"101"}}
	if a := accs["can/can0"]; a == nil || !equalAcc(*a, want) || msgs["can/can0/Brake"] != 2 || msgs["can/can0"] != 8 {
		t.Errorf("the dump's accounting: %+v (topics %v), want %+v", accs["can/can0"], msgs, want)
	}
	code, out, _ = runBin(t, "info", dumpPath)
	if code != 0 || !regexp.MustCompile(`can/can0\s+vehicle.dbc\s+decoded 3\s+unknown 3 \(555, 7FF\)\s+short 1 \(101\)`).MatchString(out) {
		t.Errorf("info:\n%s", out)
	}
	// The frames alone, decoded offline: the same trigger.
	frames := filepath.Join(t.TempDir(), "frames.pack")
	if code, _, errs := runBin(t, "filter", "--exclude", "can/can0/*", dumpPath, "-o", frames); code != 0 {
		t.Fatal(errs)
	}
	if msgs, _ := readInfoCAN(t, frames); len(msgs) != 1 || msgs["can/can0"] != 8 {
		t.Fatalf("the frames-only dump holds %v", msgs)
	}
	args := []string{"rules", "test", "--rules", "builtin:threshold", "--param", "threshold.topic=can/can0/Brake",
		"--param", "threshold.path=BrakePressure", "--param", "threshold.high=200", "--param", "threshold.reason=hard_brake"}
	code, out, errs := runBin(t, append(args, "--dbc", testDBC, frames)...)
	at := time.Unix(0, liveNs).UTC().Format(time.RFC3339Nano)
	if code != 0 || !strings.Contains(out, "threshold hard_brake at "+at+": matched") || !strings.Contains(out, "ok: 1 trigger(s) match the recording") {
		t.Errorf("rules test --dbc on the frames: %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runBin(t, append(args, frames)...); code == 0 {
		t.Errorf("rules test without --dbc on the frames matched the recorded trigger:\n%s\n%s", out, errs)
	}
}
