package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeConfig writes body ($DIR standing for a new test directory) as
// DIR/edr.toml and returns its path and the directory.
func writeConfig(t *testing.T, body string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "edr.toml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(body, "$DIR", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// configProblems is the FILE:LINE lines of a config check's stderr, with
// the file's path cut to "edr.toml".
func configProblems(path, stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, path+":") && !strings.Contains(l, ": warning: ") { // problems, not warnings
			out = append(out, "edr.toml"+strings.TrimPrefix(l, path))
		}
	}
	return out
}

// TestE2EConfigCheckEveryProblem (#30.8): a file with a bad duration and
// five other mistakes shows all six in one run of config check, each with
// file:line and its key, and run refuses it with the same six.
func TestE2EConfigCheckEveryProblem(t *testing.T) {
	path, _ := writeConfig(t, `[recorder]
dump_dir = "$DIR/dumps"
post = "2seconds"
cache_sise = "64MiB"
topic_bytes = "12XB"
format = "mcapp"
max_files = 3

[rotation]
max_files = "three"

[control]
socket = ""
`)
	want := []string{
		`edr.toml:3: recorder.post: bad duration "2seconds" (want e.g. 500ms, 15s, 2m)`,
		`edr.toml:4: recorder.cache_sise: unknown key (did you mean "cache_size"?)`,
		`edr.toml:5: recorder.topic_bytes: bad size "12XB" (want e.g. 512KiB, 256MiB, 1GB)`,
		`edr.toml:6: recorder.format: "mcapp": want one of pack, mcap (did you mean "mcap"?)`,
		`edr.toml:7: recorder.max_files: unknown key (max_files is a key of [rotation])`,
		`edr.toml:10: rotation.max_files: want an integer, got the string "three"`,
	}
	for _, verb := range [][]string{{"config", "check", path}, {"run", "--config", path}} {
		code, _, errs := runBin(t, verb...)
		got := configProblems(path, errs)
		if code != 1 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: exit %d, problems\n%s\nwant\n%s\n(stderr %s)", verb[0], code, strings.Join(got, "\n"), strings.Join(want, "\n"), errs)
		}
		if !strings.Contains(errs, ": 6 problems") {
			t.Errorf("%s does not count 6 problems:\n%s", verb[0], errs)
		}
	}
}

// TestE2EConfigRulesPointAtTheFix (#30.8b): five [[rule]] tables each with
// an unknown key are each reported at their own line; a second threshold
// without a name of its own is told to take one; a rule-level name and
// params given as TOML numbers and booleans are accepted.
func TestE2EConfigRulesPointAtTheFix(t *testing.T) {
	var b strings.Builder
	b.WriteString("[recorder]\ndump_dir = \"$DIR/dumps\"\n[control]\nsocket = \"\"\n")
	for i := range 5 {
		fmt.Fprintf(&b, "\n[[rule]]\nbuiltin = \"threshold\"\nname = \"t%d\"\nthreshold = 3\n", i)
	}
	path, _ := writeConfig(t, b.String())
	code, _, errs := runBin(t, "config", "check", path)
	got := configProblems(path, errs)
	if code != 1 || len(got) != 5 {
		t.Fatalf("config check: exit %d, %d problems, want 5:\n%s", code, len(got), errs)
	}
	for i, p := range got {
		want := fmt.Sprintf("edr.toml:%d: rule[%d].threshold: unknown key ([[rule]] takes: builtin, file, instructions, name, params, time)", 9+5*i, i)
		if p != want {
			t.Errorf("problem %d: %s\nwant %s", i, p, want)
		}
	}

	path, _ = writeConfig(t, `[recorder]
dump_dir = "$DIR/dumps"
[control]
socket = ""
[[rule]]
builtin = "threshold"
params = { topic = "vehicle/speed", offset = 0, high = 300.0 }
[[rule]]
builtin = "threshold"
params = { topic = "vehicle/rpm", high = 7000 }
`)
	code, _, errs = runBin(t, "config", "check", path)
	want := `edr.toml:8: rule[1].name: a second rule named "threshold" (rule[0] is the first): give this one a name of its own, e.g. name = "threshold_2" in this [[rule]] (or params.name)`
	if got := configProblems(path, errs); code != 1 || len(got) != 1 || got[0] != want {
		t.Errorf("a second threshold: exit %d\n%s\nwant\n%s", code, errs, want)
	}

	path, _ = writeConfig(t, `[recorder]
dump_dir = "$DIR/dumps"
[control]
socket = ""
[[rule]]
builtin = "threshold"
params = { topic = "vehicle/speed", offset = 0, high = 300.0, scale = 1 }
[[rule]]
builtin = "threshold"
name = "rpm_limit"
params = { topic = "vehicle/rpm", high = 7000, direction = "above" }
[[rule]]
builtin = "hard_brake"
params = { decel = 6.5, name = "brake" }
`)
	code, out, errs := runBin(t, "config", "check", path)
	if code != 0 || !strings.Contains(out, "rule threshold:") || !strings.Contains(out, "rule rpm_limit:") || !strings.Contains(out, "rule brake:") {
		t.Errorf("rule-level name and numeric params: exit %d\n%s%s", code, out, errs)
	}
}

// TestE2EConfigCheckCANOpens: config check opens a [[source.can]] table as
// run does — a SocketCAN interface (absent here, or a kernel without CAN),
// a CAN-over-Ethernet interface that does not exist — and says each
// problem at its key, where it said "ok" and run then refused to start;
// run refuses the same file. The summary counts the CAN sources.
func TestE2EConfigCheckCANOpens(t *testing.T) {
	path, dir := writeConfig(t, `[recorder]
dump_dir = "$DIR/dumps"

[[source.can]]
interface = "edrnocan9"

[[source.can]]
ethernet = "edrnoeth9"

[control]
socket = ""
`)
	code, _, errs := runBin(t, "config", "check", path)
	ps := configProblems(path, errs)
	if code != exitFail || len(ps) != 2 || !strings.HasPrefix(ps[0], "edr.toml:5: source.can[0].interface: edrnocan9: ") ||
		!strings.HasSuffix(ps[0], "(run would fail)") || !strings.HasPrefix(ps[1], `edr.toml:8: source.can[1].ethernet: "edrnoeth9": `) {
		t.Errorf("config check: exit %d, problems %q\n%s", code, ps, errs)
	}
	if code, _, errs := runBin(t, "run", "--config", path); code == exitOK || !strings.Contains(errs, "source.can") {
		t.Errorf("run: exit %d %s", code, errs)
	}
	fifo := filepath.Join(dir, "can.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ok, _ := writeConfig(t, "[recorder]\ndump_dir = \""+dir+"/dumps\"\n\n[[source.can]]\ncandump = \""+fifo+"\"\n\n[control]\nsocket = \"\"\n")
	if code, out, errs := runBin(t, "config", "check", ok); code != exitOK || !strings.Contains(out, "0 raw, 1 can sources") {
		t.Errorf("config check of a candump source: exit %d %s %s", code, out, errs)
	}
}
