package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CAN e2e tests: candump logs and ASC files into dumps (import, or
// given directly to info, cat, merge, export) and back out (export
// --format candump | asc), through the built binary.

// canLog has two buses, classic and CAN FD frames, RTR, an error frame,
// both directions and a raw DLC.
const canLog = `(1796218342.000100) can0 123#DEADBEEF
(1796218342.000200) can1 12345678##5112233445566778899AABBCC
(1796218342.001000) can0 7FF#R4 T
(1796218342.002000) can0 321#1122334455667788_E
(1796218342.003000) can1 20000080#0000000000000000
(1796218343.500000) can0 100#01 T
`

func writeCANLog(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "drive.log")
	if err := os.WriteFile(log, []byte(canLog), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, log
}

// TestCANRoundTrip: candump log → pack → ASC → MCAP → candump log keeps
// every frame bit for bit with its time in microseconds.
func TestCANRoundTrip(t *testing.T) {
	dir, log := writeCANLog(t)
	pk := filepath.Join(dir, "drive.pack")
	code, out, errs := runBin(t, "import", "--format", "candump", log, "-o", pk)
	if code != 0 || !strings.Contains(out, "can/can0, can/can1, can/can1/errors, 6 messages") {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	asc := filepath.Join(dir, "drive.asc")
	if code, out, errs := runBin(t, "export", "--format", "asc", pk, "-o", asc); code != 0 {
		t.Fatalf("export asc: %d %s %s", code, out, errs)
	}
	mc := filepath.Join(dir, "drive.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", asc, "-o", mc); code != 0 {
		t.Fatalf("export mcap of the ASC file: %d %s %s", code, out, errs)
	}
	code, out, errs = runBin(t, "export", "--format", "candump", mc, "-o", "-")
	if code != 0 || out != canLog {
		t.Fatalf("candump of the MCAP file: %d\n%s\nwant\n%s\n%s", code, out, canLog, errs)
	}
	// An error frame's class other than a bus error does not survive ASC:
	// the export says so.
	withClass := filepath.Join(dir, "busoff.log")
	os.WriteFile(withClass, []byte("(1796218342.003000) can1 20000040#0000000000000000\n"), 0o644)
	code, _, errs = runBin(t, "export", "--format", "asc", withClass, "-o", filepath.Join(dir, "busoff.asc"))
	if code != 0 || !strings.Contains(errs, "warning: 1 error frames written as a bare ErrorFrame") {
		t.Errorf("ASC export of a bus-off frame: %d %s", code, errs)
	}
	// The log itself opens in the offline verbs.
	code, out, errs = runBin(t, "info", log)
	if code != 0 || !strings.Contains(out, "can/can1") || !strings.Contains(out, "edr.can.FDFrame") {
		t.Errorf("info: %d %s %s", code, out, errs)
	}
	code, out, errs = runBin(t, "cat", "--decode", "--topics", "can/can0", log)
	if code != 0 || !strings.Contains(out, `"id":291,"len":4,"dlc":4,"flags":0,"data":[222,173,190,239,0,0,0,0]`) {
		t.Errorf("cat --decode: %d %s %s", code, out, errs)
	}
	code, out, errs = runBin(t, "export", "--format", "candump", asc, "-o", "-")
	if code != 0 || out != canLog {
		t.Errorf("candump of the ASC file: %d\n%s\n%s", code, out, errs)
	}
}

// TestCANBadLog: a log with a bad line fails every verb with the file,
// line and column; a dump without CAN frames is not exported as a log.
func TestCANBadLog(t *testing.T) {
	dir, _ := writeCANLog(t)
	bad := filepath.Join(dir, "bad.log")
	os.WriteFile(bad, []byte(canLog+"(1796218344.000000) can0 123#0G\n"), 0o644)
	for _, args := range [][]string{{"info", bad}, {"cat", bad}, {"export", "--format", "mcap", bad, "-o", filepath.Join(dir, "x.mcap")},
		{"import", "--format", "candump", bad, "-o", filepath.Join(dir, "x.pack")}} {
		code, _, errs := runBin(t, args...)
		if code != exitFail || !strings.Contains(errs, bad+": line 7, column 30: \"0G\" is not a hex byte") {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}
	back := filepath.Join(dir, "back.log")
	os.WriteFile(back, []byte("(1796218344.000000) can0 123#00\n(1796218343.000000) can0 123#01\n"), 0o644)
	if code, _, errs := runBin(t, "info", back); code != exitFail || !strings.Contains(errs, "line 2: the time goes back 1000000 µs") {
		t.Errorf("time going back: %d %s", code, errs)
	}
}

// TestCANDBCOffline: --dbc decodes a log's frames into one typed topic per
// DBC message, read by name in cat --decode and by a Lua rule in rules
// test (the shipped threshold rule on BrakePressure), which fires at the
// frame that crosses the level.
func TestCANDBCOffline(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "brake.log")
	os.WriteFile(log, []byte(`(1796218342.000100) can0 100#1027112700000000
(1796218342.010100) can0 101#0100000000000000
(1796218342.020100) can0 101#ABC8FF3800000007
(1796218342.030100) can0 555#01
`), 0o644)
	dbc := filepath.Join("..", "..", "can", "testdata", "vehicle.dbc")
	code, out, errs := runBin(t, "cat", "--dbc", dbc, "--decode", "--topics", "can/can0/Brake", log)
	if code != 0 || !strings.Contains(out, `"data":{"BrakePressure":274.8,"BrakePedal":1,"Decel":-0.2,"BrakeCounter":7}`) {
		t.Fatalf("cat --dbc: %d %s %s", code, out, errs)
	}
	code, out, errs = runBin(t, "rules", "test", "--dbc", dbc, "--rules", "builtin:threshold",
		"--param", "threshold.topic=can/can0/Brake", "--param", "threshold.path=BrakePressure", "--param", "threshold.high=200", "--mode", "input-only", log)
	if code != 0 || strings.Count(out, `"rule":"threshold"`) != 1 || !strings.Contains(out, `"time_ns":1796218342020100000`) ||
		!strings.Contains(out, `can/can0/Brake=274.8 \u003e 200`) {
		t.Errorf("rules test on BrakePressure: %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runBin(t, "cat", "--dbc", log, log); code != exitUsage || !strings.Contains(errs, "--dbc: can: bad DBC") && !strings.Contains(errs, "--dbc:") {
		t.Errorf("a log given as the DBC: %d %s", code, errs)
	}
}

// TestConfigInitCAN: "config init" documents [[source.can]] (its three
// kinds, commented, with the defaults of the one table), its output still
// passes "config check", and so does each example uncommented (the
// candump FIFO pointed at a file that exists): run would open them.
func TestConfigInitCAN(t *testing.T) {
	code, def, errs := runBin(t, "config", "init")
	if code != 0 {
		t.Fatalf("config init: %d %s", code, errs)
	}
	for _, want := range []string{"# [[source.can]]\n# interface = \"can0\"\n", "# ethernet = \"eth1\"", "# protocol = \"cmp\"",
		"# candump = \"/run/edr-lite/can.fifo\"", "at most 2048 a bus", "at most 64 buses a source", `"can/NAME/MESSAGE"`} {
		if !strings.Contains(def, want) {
			t.Errorf("config init lacks %q", want)
		}
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "can.fifo")
	os.WriteFile(fifo, nil, 0o644)
	def = strings.Replace(def, `dump_dir = "/var/lib/edr-lite/dumps"`, `dump_dir = "`+filepath.Join(dir, "dumps")+`"`, 1)
	def = strings.Replace(def, `socket = "/run/edr-lite.sock"`, `socket = "`+filepath.Join(dir, "edr.sock")+`"`, 1)
	asIs := filepath.Join(dir, "init.toml")
	os.WriteFile(asIs, []byte(def), 0o644)
	if code, out, errs := runBin(t, "config", "check", asIs); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("config check of config init's output: %d %s %s", code, out, errs)
	}
	// Uncomment the three [[source.can]] examples.
	var b strings.Builder
	in, tables := false, 0
	for _, l := range strings.Split(def, "\n") {
		switch {
		case l == "# [[source.can]]":
			in = true
			tables++
		case in && (!strings.HasPrefix(l, "# ") || l == "#"):
			in = false
		}
		if in {
			l = strings.TrimPrefix(l, "# ")
		}
		b.WriteString(l + "\n")
	}
	uncommented := filepath.Join(dir, "can.toml")
	os.WriteFile(uncommented, []byte(strings.Replace(b.String(), "/run/edr-lite/can.fifo", fifo, 1)), 0o644)
	// config check opens the sources as run does: the examples' keys all
	// pass, and what remains is what this machine lacks (a CAN interface
	// can0, an interface eth1 and the right to capture on it), said the
	// same by run.
	code, out, errs := runBin(t, "config", "check", uncommented)
	if tables != 3 || code != 0 && code != exitFail || code == 0 && !strings.Contains(out, "ok") {
		t.Fatalf("config check with the %d CAN examples uncommented: %d %s %s", tables, code, out, errs)
	}
	ps := configProblems(uncommented, errs)
	for _, p := range ps {
		if !strings.Contains(p, ": source.can[0].interface: can0: ") && !strings.Contains(p, `: source.can[1].ethernet: "eth1": `) &&
			!strings.Contains(p, ": source.can[1]: ") {
			t.Errorf("config check of the CAN examples: %s", p)
		}
	}
	if code != 0 {
		_, _, runErrs := runBin(t, "run", "--config", uncommented)
		if got := configProblems(uncommented, runErrs); strings.Join(got, "\n") != strings.Join(ps, "\n") {
			t.Errorf("run says\n%s\nconfig check\n%s", strings.Join(got, "\n"), strings.Join(ps, "\n"))
		}
	}
}

// TestCANLogInfoSaysNoIndex: info of a candump log says what it is, not
// that recover rebuilds its index (recover refuses CAN logs: they are
// frames, not dumps).
func TestCANLogInfoSaysNoIndex(t *testing.T) {
	_, log := writeCANLog(t)
	code, out, errs := runBin(t, "info", log)
	if code != 0 || strings.Contains(out, "recover") || !strings.Contains(out, "format:     candump, 266B, a CAN log (read through; import makes it a dump)") {
		t.Errorf("info: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBin(t, "recover", log, "-o", log+".pack"); code != exitFail || !strings.Contains(errs, "not a dump") {
		t.Errorf("recover of a CAN log: %d %s", code, errs)
	}
}
