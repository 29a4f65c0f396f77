package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// tyOdom is a ROS 2 topic: recorded with its schema, not decoded by cat.
var tyOdom = ingest.Type{MessageEncoding: ingest.EncodingCDR, Schema: ingest.Schema{Name: "std_msgs/msg/Float32",
	Encoding: ingest.SchemaROS2Msg, Data: []byte("float32 data\n")}}

// decodeTestMessages: rounds 20 to 29 of the typed dump (speed changes
// layout at 25) and, at round 27, messages that do not decode with their
// types: a speed message shorter than its layout, a clock message that is
// not protobuf, a calibration that is not JSON; and a ROS 2 topic (cdr,
// not decoded here).
func decodeTestMessages() []typedMsg {
	var out []typedMsg
	for _, m := range typedTestMessages() {
		if m.t < t0+20*10e6 || m.t >= t0+30*10e6 {
			continue
		}
		out = append(out, m)
		if m.name == "blob" { // round 20: the CDR topic's only message
			out = append(out, typedMsg{"ros/level", tyOdom, m.t + 1, []byte{0, 1, 0, 0, 0, 0, 0x80, 0x3f}})
		}
		if m.name == "clock" && m.t == t0+27*10e6+1 {
			ts := m.t + 1
			out = append(out,
				typedMsg{"vehicle/speed", tySpeedB, ts, []byte{1, 2, 3}},
				typedMsg{"clock", tyClock, ts + 1, []byte{0xff, 0xff, 0xff}},
				typedMsg{"calibration", tyCal, ts + 2, []byte(`{"wheelbase":`)})
		}
	}
	return out
}

// TestCatDecode: cat --decode, --fields and --format csv through the built
// binary, pinned in golden files: packed structs by layout (across the
// change of layout), protobuf by descriptor, JSON as it is; messages that
// do not decode are shown raw with a warning each, the raw and CDR topics
// raw. The MCAP export decodes to the same lines; so does standard input.
func TestCatDecode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "typed.pack")
	writeTypedDump(t, p, decodeTestMessages())
	m := filepath.Join(dir, "typed.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", p, "-o", m); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}

	code, out, errs := runBin(t, "cat", p, "--decode")
	if code != 0 {
		t.Fatalf("cat --decode: exit %d: %s", code, errs)
	}
	checkGolden(t, "cat-decode.jsonl", out)
	// protobuf's errors put a non-breaking space after "proto:" in some
	// builds and not others (on purpose: they are not to be matched)
	checkGolden(t, "cat-decode.stderr", strings.ReplaceAll(scrubDir(errs, dir), "\u00a0", " "))
	raws := 0
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct {
			Topic string
			Data  json.RawMessage
			Raw   string
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if (l.Raw != "") == (l.Data != nil) {
			t.Errorf("line %d: not either decoded or raw: %s", i+1, line)
		}
		if l.Raw != "" {
			raws++
		}
	}
	if raws != 5 { // the blob, the CDR message and the three that do not decode
		t.Errorf("%d messages shown raw, want 5", raws)
	}
	if n := strings.Count(errs, "\n"); n != 4 { // three messages that do not decode, and the CDR one
		t.Errorf("%d warnings, want 4:\n%s", n, errs)
	}

	// The MCAP export: speed transcoded to JSON, the same data; what did
	// not decode is in it as it was (and shown raw again).
	_, mout, _ := runBin(t, "cat", m, "--decode")
	if mout != out {
		t.Errorf("cat --decode of the MCAP export differs:\n%s", lineDiff(out, mout))
	}
	// Standard input (a pack stream).
	cmd := exec.Command(edrBinary(t), "cat", "-", "--decode")
	f, _ := os.Open(p)
	defer f.Close()
	cmd.Stdin = f
	sout, err := cmd.Output()
	if err != nil || string(sout) != out {
		t.Errorf("cat - --decode: %v\n%s", err, lineDiff(out, string(sout)))
	}

	// --fields, nested and indexed paths; an absent field is null.
	code, out, errs = runBin(t, "cat", p, "--decode", "--topics", "vehicle/speed,clock", "--fields", "speed,gear,value")
	if code != 0 {
		t.Fatalf("cat --decode --fields: exit %d: %s", code, errs)
	}
	checkGolden(t, "cat-decode-fields.jsonl", out)

	code, out, errs = runBin(t, "cat", p, "--format", "csv", "--fields", "speed,gear,value,wheelbase")
	if code != 0 {
		t.Fatalf("cat --format csv: exit %d: %s", code, errs)
	}
	checkGolden(t, "cat-decode.csv", out)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "time,ts,topic,speed,gear,value,wheelbase" {
		t.Errorf("header %q", rows[0])
	}
	speeds := 0
	for _, r := range rows[1:] {
		if r[2] == "vehicle/speed" {
			speeds++
			if _, err := strconv.ParseFloat(r[3], 64); err != nil {
				t.Errorf("speed cell %q: %v", r[3], err)
			}
		}
	}
	if speeds != 10 { // the short message has no row
		t.Errorf("%d speed rows, want 10", speeds)
	}

	// A field no decoded message has (a typo): alone, an error naming it
	// and the fields there are (exit 1; it printed an empty CSV, exit 0);
	// beside one found, a warning about its empty column. --limit counts
	// the rows printed, not the messages read.
	for _, format := range [][]string{{"--format", "csv"}, {"--decode"}} {
		code, _, errs = runBin(t, append([]string{"cat", p, "--topics", "vehicle/speed", "--fields", "sped"}, format...)...)
		if code != exitFail || !strings.Contains(errs, "--fields sped: no decoded message has any of them (the decoded messages' fields: ") ||
			!strings.Contains(errs, "speed") {
			t.Errorf("cat %v --fields sped: exit %d, %q", format, code, errs)
		}
	}
	code, out, errs = runBin(t, "cat", p, "--format", "csv", "--topics", "vehicle/speed", "--fields", "speed,sped")
	if code != 0 || !strings.Contains(errs, "warning: --fields sped: no decoded message has it") || strings.Count(out, "\n") != 11 {
		t.Errorf("cat --fields speed,sped: exit %d, %q\n%s", code, errs, out)
	}
	code, out, errs = runBin(t, "cat", p, "--format", "csv", "--fields", "gear", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("cat --format csv --fields gear --limit 2: exit %d, want a header and 2 rows:\n%s%s", code, out, errs)
	}
}

// TestCatDecodeUsage: the combinations cat refuses exit 2 naming the flag.
func TestCatDecodeUsage(t *testing.T) {
	p := writeTestDump(t, t.TempDir(), "a.pack")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fields", "speed"}, "--fields: needs --decode or --format csv"},
		{[]string{"--format", "csv"}, "--format csv: give the columns with --fields"},
		{[]string{"--format", "xml"}, `--format "xml"`},
		{[]string{"--decode", "--fields", "a..b"}, `--fields: no such field: path "a..b"`},
		{[]string{"--decode", "--jsonl"}, "--decode and --jsonl: choose one"},
	} {
		code, _, errs := runBin(t, append([]string{"cat", p}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("cat %v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	// an untyped dump decodes to raw lines, without a warning
	code, out, errs := runBin(t, "cat", p, "--decode", "--limit", "2")
	if code != 0 || errs != "" || strings.Count(out, `"raw":"`) != 2 || bytes.Contains([]byte(out), []byte(`"data"`)) {
		t.Errorf("cat --decode of an untyped dump: %d\n%s%s", code, out, errs)
	}
}
