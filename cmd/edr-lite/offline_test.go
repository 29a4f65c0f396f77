package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

const t0 = int64(1_764_670_000_000_000_000)

// writeTestDump writes a pack dump with two topics (speed every 10ms, camera
// every 100ms of 1000 bytes) over 1s and one trigger at +0.5s. The bytes are
// the same on every run (the golden files rely on it).
func writeTestDump(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test", CreatedNs: t0 - 1e9, TargetFrameSize: 4096, TargetFrameSpan: -1}) // a fixture: frames by size only, as the golden files know them
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		ts := t0 + int64(i)*10e6
		if err := w.Add("vehicle/speed", "", nil, ts-1000, ts, []byte{byte(i), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			img := make([]byte, 1000)
			img[0] = byte(i)
			if err := w.Add("camera/front", "", nil, 0, ts, img); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = w.SetDumpInfo(dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake", Source: "rule", Rule: "hard_brake", TimeNs: t0 + 500e6, PreNs: 5e8, PostNs: 5e8,
			PreSet: true, PostSet: true, FromNs: t0, ToNs: t0 + 1e9}},
		Topics: []dumpinfo.TopicAccount{
			{Topic: "vehicle/speed", Type: "f32", Messages: 100, Bytes: 400, Overwritten: 3, FirstNs: t0, LastNs: t0 + 990e6},
			{Topic: "camera/front", Messages: 10, Bytes: 10000, FirstNs: t0, LastNs: t0 + 900e6},
		},
		StartNs: t0, EndNs: t0 + 1e9,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInfo(t *testing.T) {
	p := writeTestDump(t, t.TempDir(), "a.pack")
	code, out, errs := runCLI(t, "info", p)
	if code != exitOK {
		t.Fatalf("info: %d %s", code, errs)
	}
	for _, want := range []string{"hard-brake", "source=rule:hard_brake", "vehicle/speed", "camera/front", "indexed", "100.0 Hz", "compress:   none"} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "info", "--json", p)
	if code != exitOK {
		t.Fatal(code)
	}
	var in struct {
		Path     string `json:"path"`
		Messages uint64 `json:"messages"`
		StartNs  int64  `json:"start_ns"`
		EndNs    int64  `json:"end_ns"`
		Topics   []struct {
			Name        string `json:"name"`
			Messages    uint64 `json:"messages"`
			Bytes       uint64 `json:"bytes"`
			Overwritten uint64 `json:"overwritten"`
		} `json:"topics"`
		Triggers []struct {
			Reason string `json:"reason"`
			TimeNs int64  `json:"time_ns"`
			Source string `json:"source"`
		} `json:"triggers"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if in.Path != p || in.Messages != 110 || in.StartNs != t0 || in.EndNs != t0+1e9 || len(in.Topics) != 2 {
		t.Errorf("json info = %+v", in)
	}
	if in.Topics[1].Name != "vehicle/speed" || in.Topics[1].Messages != 100 || in.Topics[1].Overwritten != 3 {
		t.Errorf("speed topic = %+v", in.Topics[1])
	}
	if len(in.Triggers) != 1 || in.Triggers[0].Reason != "hard-brake" || in.Triggers[0].TimeNs != t0+500e6 || in.Triggers[0].Source != "rule" {
		t.Errorf("triggers = %+v", in.Triggers)
	}
	if code, _, errs := runCLI(t, "info", filepath.Join(t.TempDir(), "missing.pack")); code != exitFail || !strings.Contains(errs, "missing.pack") {
		t.Errorf("missing file: code %d, stderr %q", code, errs)
	}
	junk := filepath.Join(t.TempDir(), "junk.pack")
	os.WriteFile(junk, []byte("hello world, not a dump"), 0o644)
	if code, _, errs := runCLI(t, "info", junk); code != exitFail || !strings.Contains(errs, "not a pack, MCAP, JSON lines, MP4, candump log or ASC") {
		t.Errorf("junk file: code %d, stderr %q", code, errs)
	}
}

func TestCat(t *testing.T) {
	p := writeTestDump(t, t.TempDir(), "a.pack")
	code, out, _ := runCLI(t, "cat", p)
	if code != exitOK || strings.Count(out, "\n") != 110 {
		t.Fatalf("cat: code %d, %d lines", code, strings.Count(out, "\n"))
	}
	// a glob that matches no topic beside one that does (a typo): a
	// warning naming it and the topics there are, for cat and filter
	for _, args := range [][]string{{"cat", p, "--limit", "1"}, {"filter", p, "-o", filepath.Join(t.TempDir(), "f.pack")}} {
		code, _, errs := runBin(t, append(args, "--topics", "camera/*,camera/fron", "--exclude", "vehicle/sped")...)
		if code != 0 || !strings.Contains(errs, "warning: --topics camera/fron matches no topic; "+p+" holds ") ||
			!strings.Contains(errs, "warning: --exclude vehicle/sped matches no topic") {
			t.Errorf("%s with globs that match nothing: exit %d, %q", args[0], code, errs)
		}
	}
	code, out, _ = runCLI(t, "cat", p, "--topics", "camera/*", "--jsonl", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 {
		t.Fatalf("cat camera: code %d, %d lines", code, len(lines))
	}
	var m struct {
		Topic string `json:"topic"`
		TS    int64  `json:"ts"`
		Size  int    `json:"size"`
		Data  []byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Topic != "camera/front" || m.TS != t0+100e6 || m.Size != 1000 || len(m.Data) != 1000 || m.Data[0] != 10 {
		t.Errorf("second camera message = %+v", m)
	}
	// window by offset from the start: speed messages at 200..290ms
	code, out, _ = runCLI(t, "cat", p, "--topics", "vehicle/speed", "--from", "200ms", "--to", fmt.Sprint(t0+290e6))
	if code != exitOK || strings.Count(out, "\n") != 10 {
		t.Errorf("window: code %d, %d lines:\n%s", code, strings.Count(out, "\n"), out)
	}
	if code, _, _ := runCLI(t, "cat", p, "--from", "yesterday"); code != exitUsage {
		t.Errorf("bad --from: code %d, want 2", code)
	}
}

func TestLs(t *testing.T) {
	dir := t.TempDir()
	writeTestDump(t, dir, "20261202T101500Z_hard-brake_0001.pack")
	os.WriteFile(filepath.Join(dir, "20261202T101600Z_manual_0002.pack.tmp"), []byte("partial"), 0o644)
	code, out, _ := runCLI(t, "ls", dir)
	if code != exitOK || !strings.Contains(out, "hard-brake") || !strings.Contains(out, "1 dumps") || !strings.Contains(out, "leftover: 20261202T101600Z_manual_0002.pack.tmp") {
		t.Errorf("ls: code %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "ls", filepath.Join(dir, "nope")); code != exitFail {
		t.Errorf("ls missing dir: code %d", code)
	}
	// an unreadable dump: its row says why, in the user's words, and so
	// does standard error (exit 1)
	os.WriteFile(filepath.Join(dir, "20261202T101700Z_manual_0003.pack"), nil, 0o644)
	code, out, errs := runBin(t, "ls", dir)
	if code != exitFail || !strings.Contains(out, "20261202T101700Z_manual_0003.pack (unreadable: not a pack, MCAP") ||
		!strings.Contains(errs, "edr-lite ls: "+filepath.Join(dir, "20261202T101700Z_manual_0003.pack")+": not a pack") || rePackagePrefix.MatchString(out+errs) {
		t.Errorf("ls with an empty dump: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

func TestVerifyAndRecover(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	if code, out, _ := runCLI(t, "verify", p); code != exitOK || !strings.Contains(out, "ok") {
		t.Fatalf("verify intact: code %d\n%s", code, out)
	}
	b, _ := os.ReadFile(p)
	bad := filepath.Join(dir, "bad.pack")
	c := append([]byte(nil), b...)
	c[len(c)/3] ^= 0x40
	os.WriteFile(bad, c, 0o644)
	code, out, _ := runCLI(t, "verify", p, bad)
	if code != exitFail || !strings.Contains(out, "bad.pack: CORRUPT") || !strings.Contains(out, "offset ") {
		t.Fatalf("verify corrupt: code %d\n%s", code, out)
	}
	// power loss: cut the file in the middle of a frame
	cut := filepath.Join(dir, "cut.pack.tmp")
	os.WriteFile(cut, b[:len(b)/2+7], 0o644)
	if code, _, _ := runCLI(t, "verify", cut); code != exitFail {
		t.Errorf("verify truncated: code %d, want 1", code)
	}
	rec := filepath.Join(dir, "rec.pack")
	code, out, errs := runCLI(t, "recover", cut, "-o", rec)
	if code != exitOK || !strings.Contains(out, "salvaged") {
		t.Fatalf("recover: code %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
		t.Errorf("recovered file does not verify:\n%s", out)
	}
	if code, _, _ := runCLI(t, "recover", cut, "-o", rec); code != exitFail {
		t.Errorf("recover over an existing file: code %d, want 1", code)
	}
	if code, _, _ := runCLI(t, "recover", cut); code != exitUsage {
		t.Errorf("recover without -o: code %d, want 2", code)
	}
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := writeTestDump(t, dir, "a.pack")
	b := writeTestDump(t, dir, "b.pack")
	out := filepath.Join(dir, "ab.pack")
	code, o, errs := runCLI(t, "merge", a, b, "-o", out, "--compression", "zstd")
	if code != exitOK || !strings.Contains(o, "220 messages") || !strings.Contains(o, "2 triggers") {
		t.Fatalf("merge: code %d\n%s%s", code, o, errs)
	}
	if code, o, _ := runCLI(t, "verify", out); code != exitOK {
		t.Fatalf("merged file does not verify: %s", o)
	}
	_, o, _ = runCLI(t, "cat", out, "--jsonl")
	var last int64
	for i, line := range strings.Split(strings.TrimSpace(o), "\n") {
		var m struct{ TS int64 }
		json.Unmarshal([]byte(line), &m)
		if m.TS < last {
			t.Fatalf("line %d goes back in time: %d < %d", i, m.TS, last)
		}
		last = m.TS
	}
	_, o, _ = runCLI(t, "info", "--json", out)
	if !strings.Contains(o, `"overwritten":6`) {
		t.Errorf("merged accounting must sum the inputs' losses: %s", o)
	}
}

// TestVerifyMCAP: verify checks MCAP files too — an export verifies, a
// byte flipped inside a chunk and a cut file are reported with an offset
// and exit 1, with the recover command to run; recover salvages them into
// files that verify.
func TestVerifyMCAP(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	if code, out, errs := runCLI(t, "export", "--format", "mcap", p, "-o", m); code != exitOK {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "verify", m); code != exitOK || !strings.Contains(out, "a.mcap: ok, mcap,") || !strings.Contains(out, "110 messages") {
		t.Fatalf("verify intact MCAP: code %d\n%s", code, out)
	}
	b, _ := os.ReadFile(m)
	bad := filepath.Join(dir, "bad.mcap")
	c := append([]byte(nil), b...)
	c[len(c)/3] ^= 0x40 // inside the data section: a chunk's records or its CRC
	os.WriteFile(bad, c, 0o644)
	code, out, _ := runCLI(t, "verify", bad)
	if code != exitFail || !strings.Contains(out, "bad.mcap: CORRUPT") || !strings.Contains(out, "offset ") || !strings.Contains(out, "edr-lite recover "+bad+" -o RECOVERED.mcap") {
		t.Fatalf("verify corrupt MCAP: code %d\n%s", code, out)
	}
	cut := filepath.Join(dir, "cut.mcap")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	if code, out, _ := runCLI(t, "verify", cut); code != exitFail {
		t.Errorf("verify cut MCAP: code %d, want 1\n%s", code, out)
	}
	code, _, errs := runCLI(t, "recover", bad, "-o", filepath.Join(dir, "r.pack"))
	if code != exitUsage || !strings.Contains(errs, "is an MCAP file and recover writes the same format") {
		t.Errorf("recover of an MCAP file to .pack: code %d, stderr %q", code, errs)
	}
	for _, in := range []string{bad, cut} {
		rec := in + ".recovered.mcap"
		code, out, errs := runCLI(t, "recover", in, "-o", rec)
		if code != exitOK || !strings.Contains(out, "lost ") {
			t.Fatalf("recover %s: code %d\n%s%s", in, code, out, errs)
		}
		if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
			t.Errorf("recovered %s does not verify:\n%s", in, out)
		}
	}
}
