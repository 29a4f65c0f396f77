package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// The ECU build's fit (docs/ecu.md): its stripped linux/arm64 binary is at
// most ecuMaxBytes (12,000,000 bytes, within issue #33's goal of 12 MiB),
// and with 100 idle topics and a 16 MiB cache it runs on at most 16 OS
// threads; its resident memory is logged.
const (
	ecuMaxBytes  = 12_000_000
	ecuMaxThread = 16
)

// buildStrippedECU builds cmd/edr-lite with -tags ecu, stripped, for
// linux/goarch into dir.
func buildStrippedECU(t *testing.T, dir, goarch string) string {
	t.Helper()
	out := filepath.Join(dir, "edr-lite-ecu-"+goarch)
	cmd := exec.Command("go", "build", "-tags", "ecu", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "GOARM=7")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags ecu (%s): %v\n%s", goarch, err, b)
	}
	return out
}

var (
	ecuOnce sync.Once
	ecuPath string
	ecuErr  error
)

// ecuBinary builds the ECU build for this machine once per test run.
func ecuBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the ECU binary; skipped in -short mode")
	}
	testutil.SkipUnderEmulation(t, "builds binaries")
	ecuOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edr-lite-ecu-")
		if err != nil {
			ecuErr = err
			return
		}
		ecuPath = filepath.Join(dir, "edr-lite")
		if out, err := exec.Command("go", "build", "-tags", "ecu", "-o", ecuPath, ".").CombinedOutput(); err != nil {
			ecuErr = fmt.Errorf("go build -tags ecu: %v\n%s", err, out)
		}
	})
	if ecuErr != nil {
		t.Fatal(ecuErr)
	}
	return ecuPath
}

// TestECUBuildSize: the stripped linux/arm64 ECU binary is at most
// 12,000,000 bytes; the linux/arm (v7) one's size is logged beside it.
func TestECUBuildSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped in -short mode")
	}
	testutil.SkipUnderEmulation(t, "builds binaries")
	dir := t.TempDir()
	for _, goarch := range []string{"arm64", "arm"} {
		st, err := os.Stat(buildStrippedECU(t, dir, goarch))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ECU build, linux/%s, stripped: %d bytes (%.2f MiB)", goarch, st.Size(), float64(st.Size())/(1<<20))
		if goarch == "arm64" && st.Size() > ecuMaxBytes {
			t.Errorf("the ECU build is %d bytes, more than its bound %d (docs/ecu.md: what it leaves out, what else could leave)",
				st.Size(), ecuMaxBytes)
		}
	}
}

// TestECUBuild runs the ECU build (native, for this machine): it says
// which verbs it has and which build has the others, refuses what it
// cannot do with the reason, and records 100 idle topics in a 16 MiB cache
// on at most 16 OS threads (its RSS logged), its status read by "edr-lite
// status" over the control socket.
func TestECUBuild(t *testing.T) {
	bin := ecuBinary(t)
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runExe(t, bin, args...)
	}
	if code, out, _ := run("version"); code != 0 || !strings.Contains(out, "build:    ecu") {
		t.Errorf("version: %d %q, want build ecu", code, out)
	}
	_, help, _ := run("help")
	for _, v := range []string{"upload", "report", "demo"} {
		code, _, errs := run(v, "x")
		if code != exitUsage || !strings.Contains(errs, "not in this build of edr-lite (the ECU build)") || !strings.Contains(errs, "full build") {
			t.Errorf("%s: %d %q, want exit 2 naming the full build", v, code, errs)
		}
		if !strings.Contains(help, fmt.Sprintf("  %-10s (full build only)", v)) {
			t.Errorf("help does not mark %s as full build only:\n%s", v, help)
		}
	}
	for _, v := range []string{"run", "trigger", "status", "reload", "config", "info", "cat", "list", "ls", "verify", "recover",
		"merge", "filter", "split", "compress", "export", "import", "replay", "replay-ctl", "rules", "version", "completion"} {
		if !strings.Contains(help, "  "+v+" ") {
			t.Errorf("help does not list %s:\n%s", v, help)
		}
	}
	dump := writeTestDump(t, dir, "d.pack")
	if code, _, errs := run("verify", dump); code != 0 {
		t.Errorf("verify: %d %s", code, errs)
	}
	if code, _, errs := run("export", "--format", "parquet", dump, "-o", filepath.Join(dir, "tables")); code != exitFail ||
		!strings.Contains(errs, "--format parquet is not in this build") {
		t.Errorf("export --format parquet: %d %q, want exit 1 naming the full build", code, errs)
	}
	up := filepath.Join(dir, "up.toml")
	os.WriteFile(up, []byte(fmt.Sprintf("[recorder]\ndump_dir = %q\n[upload]\nendpoint = \"https://s3.example.com\"\nbucket = \"b\"\n", filepath.Join(dir, "dumps"))), 0o644)
	if code, _, errs := run("config", "check", up); code != exitFail || !strings.Contains(errs, "upload.endpoint: not in this build of edr-lite (the ECU build") {
		t.Errorf("config check of [upload]: %d %q, want the ECU build's refusal at upload.endpoint", code, errs)
	}

	// 100 idle topics, a 16 MiB cache.
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(strings.ReplaceAll(strings.Replace(fmt.Sprintf(idleConfig, 4096), `"256MiB"`, `"16MiB"`, 1), "$DIR", dir)), 0o644)
	idleProducers(t, filepath.Join(dir, "shm"), 100)
	cmd := exec.Command(bin, "run", "--config", cfg)
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	d := &runningDaemon{cmd: cmd, logs: &logs, sock: filepath.Join(dir, "edr.sock"), dir: dir}
	waitFor(t, func() bool { _, err := os.Stat(d.sock); return err == nil }, "the control socket")
	waitFor(t, func() bool { return len(d.shmStatus(t).Topics) == 100 }, "100 topics")
	time.Sleep(time.Second) // every follower asleep
	pid := cmd.Process.Pid
	threads, rss := procStatus(t, pid, "Threads"), procStatus(t, pid, "VmRSS")
	t.Logf("ECU build, 100 idle topics, 16 MiB cache: %d OS threads, %.1f MiB resident", threads, float64(rss)/1024)
	if threads > ecuMaxThread {
		t.Errorf("%d OS threads, want at most %d", threads, ecuMaxThread)
	}
	// status without the HTTP listener: over the control socket
	code, out, errs := run("status", "--socket", d.sock)
	if code != 0 || !strings.Contains(out, "cache:") || !strings.Contains(out, "TOPIC") {
		t.Errorf("status: %d %q\n%s", code, errs, out)
	}
}

// TestECURefusesHTTP: the ECU build has no HTTP listener, metrics, pprof
// or live server; a configuration that asks for one is refused by "config
// check" and by "run" alike, each with the same problem at the key, naming
// the builds that have it. Without them it runs (TestECUBuild).
func TestECURefusesHTTP(t *testing.T) {
	bin := ecuBinary(t)
	dir := t.TempDir()
	base := fmt.Sprintf("[recorder]\ndump_dir = %q\ncache_size = \"8MiB\"\n[rotation]\nmin_free_disk = 0\n[control]\nsocket = %q\n",
		filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock"))
	for _, c := range []struct{ name, conf, key string }{
		{"live", "[live]\nlisten = \"127.0.0.1:0\"\n", "live.listen"},
		{"live beyond loopback", "[live]\nlisten = \"0.0.0.0:0\"\ntoken = \"t\"\nclient_publish = true\n", "live.listen"},
		{"live publish only", "[live]\nclient_publish = true\n", "live.client_publish"},
		{"http", "http = \"127.0.0.1:0\"\n", "control.http"},
		{"http token", "http_token = \"s3cret\"\n", "control.http_token"},
		{"pprof", "pprof = true\n", "control.pprof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".toml")
			os.WriteFile(cfg, []byte(base+c.conf), 0o600)
			problem := func(verb, errs string) string {
				t.Helper()
				for _, l := range strings.Split(errs, "\n") {
					if strings.HasPrefix(l, cfg+":") && strings.Contains(l, ": "+c.key+": ") {
						return strings.TrimPrefix(l, cfg)
					}
				}
				t.Errorf("%s: no problem at %s:\n%s", verb, c.key, errs)
				return ""
			}
			code, _, errs := runExe(t, bin, "config", "check", cfg)
			checked := problem("config check", errs)
			if code != exitFail || strings.Count(errs, "not in this build") != 1 {
				t.Errorf("config check: exit %d, want 1 with one problem:\n%s", code, errs)
			}
			for _, want := range []string{"not in this build of edr-lite (the ECU build", "the full build has it", "-tags ecu,http", "docs/ecu.md"} {
				if !strings.Contains(checked, want) {
					t.Errorf("config check: %q does not say %q", checked, want)
				}
			}
			// a run that starts instead of refusing is stopped after 20 s
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--config", cfg)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			code, errs = cmd.ProcessState.ExitCode(), stderr.String()
			if ran := problem("run", errs); code != exitFail || ran != checked {
				t.Errorf("run: exit %d, problem %q; want exit 1 and config check's %q", code, ran, checked)
			}
			if _, err := os.Stat(filepath.Join(dir, "dumps")); err == nil {
				t.Error("run made the dump directory before refusing the configuration")
			}
		})
	}
}

// TestECUWithHTTP: go build -tags ecu,http puts the HTTP stack back into
// the ECU build: it says so in version, and runs the HTTP listener
// (/metrics, /status; the report pages answer 404 naming the full build)
// and the live server from the configuration the ECU build refuses.
func TestECUWithHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped in -short mode")
	}
	testutil.SkipUnderEmulation(t, "builds binaries")
	dir := t.TempDir()
	bin := filepath.Join(dir, "edr-lite-ecu-http")
	if out, err := exec.Command("go", "build", "-tags", "ecu,http", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags ecu,http: %v\n%s", err, out)
	}
	if code, out, _ := runExe(t, bin, "version"); code != 0 || !strings.Contains(out, "build:    ecu+http") {
		t.Errorf("version: %d %q, want build ecu+http", code, out)
	}
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[recorder]\ndump_dir = %q\ncache_size = \"8MiB\"\n[rotation]\nmin_free_disk = 0\n"+
		"[control]\nsocket = %q\nhttp = \"127.0.0.1:0\"\n[live]\nlisten = \"127.0.0.1:0\"\n", filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock"))), 0o600)
	if code, _, errs := runExe(t, bin, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %d\n%s", code, errs)
	}
	cmd := exec.Command(bin, "run", "--config", cfg)
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	d := &runningDaemon{cmd: cmd, logs: &logs, sock: filepath.Join(dir, "edr.sock"), dir: dir}
	addr := d.httpAddr(t)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `edr_dumps_total{outcome="written"} 0`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	if code, body := get("/"); code != 404 || !strings.Contains(body, "not in this build of edr-lite (the ECU build): the full build has them") {
		t.Errorf("/: %d %q, want 404 naming the full build", code, body)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "live: Foxglove WebSocket server listening") }, "the live server")
}

// TestECURefusesCameraFiles: the ECU build links no camera files (package
// media, image/jpeg; docs/ecu.md). An MP4 file or a JPEG folder given to a
// verb, and --format mp4 or jpeg-dir of import and export, are refused
// with exit 1 saying that the full build reads and writes them; the full
// build does each of them.
func TestECURefusesCameraFiles(t *testing.T) {
	ecu, full := ecuBinary(t), edrBinary(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip.mp4")
	if err := os.WriteFile(clip, validMP4(), 0o644); err != nil {
		t.Fatal(err)
	}
	frames := filepath.Join(dir, "frames")
	writeJPEGDir(t, frames, 3, mediaT0, 1e8)
	video := filepath.Join(dir, "video.pack") // a dump of a video topic, made by the full build
	if code, _, errs := runExe(t, full, "import", "--format", "mp4", clip, "--start", "2026-12-02T10:15:00Z", "-o", video); code != 0 {
		t.Fatalf("full build: import --format mp4: %d %s", code, errs)
	}
	for _, c := range []struct {
		name string
		args func(out string) []string
		says string // what the ECU build's refusal names
	}{
		{"info mp4", func(string) []string { return []string{"info", clip} }, clip + ": not a pack, MCAP, JSON lines, candump log or ASC file: an MP4 file: camera files"},
		{"info jpeg-dir", func(string) []string { return []string{"info", frames} }, frames + ": not a pack, MCAP, JSON lines, candump log or ASC file: a JPEG folder: camera files"},
		{"cat mp4", func(string) []string { return []string{"cat", clip} }, "an MP4 file: camera files"},
		{"merge mp4", func(out string) []string { return []string{"merge", video, clip, "-o", out + ".pack"} }, "an MP4 file: camera files"},
		{"recover mp4", func(out string) []string { return []string{"recover", clip, "-o", out + ".mp4"} }, "an MP4 file: camera files"},
		{"import mp4", func(out string) []string {
			return []string{"import", "--format", "mp4", clip, "--start", "2026-12-02T10:15:00Z", "-o", out + ".pack"}
		}, "--format mp4: camera files"},
		{"import jpeg-dir", func(out string) []string {
			return []string{"import", "--format", "jpeg-dir", frames, "-o", out + ".pack"}
		}, "--format jpeg-dir: camera files"},
		{"export mp4", func(out string) []string { return []string{"export", "--format", "mp4", video, "-o", out + ".mp4"} }, "--format mp4: camera files"},
		{"export jpeg-dir", func(out string) []string { return []string{"export", "--format", "jpeg-dir", video, "-o", out} }, "--format jpeg-dir: camera files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "_")
			if code, _, errs := runExe(t, full, c.args(filepath.Join(dir, "full-"+name))...); code != 0 && c.name != "export jpeg-dir" {
				t.Errorf("full build: %d %s", code, errs)
			}
			out := filepath.Join(dir, "ecu-"+name)
			code, _, errs := runExe(t, ecu, c.args(out)...)
			if code != exitFail {
				t.Errorf("ECU build: exit %d, want 1:\n%s", code, errs)
			}
			for _, want := range []string{c.says, "not in this build of edr-lite (the ECU build, go build -tags ecu): the full build reads and writes them (docs/ecu.md)"} {
				if !strings.Contains(errs, want) {
					t.Errorf("ECU build: %q does not say %q", errs, want)
				}
			}
			if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
				t.Errorf("ECU build left %v", m)
			}
		})
	}
}

// TestECURefusesRawFilter: the ECU build has no eBPF socket filter
// (cilium/ebpf; docs/ecu.md). A raw source with a [source.raw.filter] is
// refused by "config check" and by "run" alike, exit 1, at its filter key,
// naming the full build; the same source without a filter passes the
// check (the full build checks the filter as before).
func TestECURefusesRawFilter(t *testing.T) {
	ecu, full := ecuBinary(t), edrBinary(t)
	dir := t.TempDir()
	base := fmt.Sprintf("[recorder]\ndump_dir = %q\ncache_size = \"8MiB\"\n[rotation]\nmin_free_disk = 0\n[control]\nsocket = %q\n"+
		"[[source.raw]]\ninterface = \"lo\"\ntopic = \"raw/lo\"\n", filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock"))
	plain := filepath.Join(dir, "plain.toml")
	os.WriteFile(plain, []byte(base), 0o600)
	filtered := filepath.Join(dir, "filtered.toml")
	os.WriteFile(filtered, []byte(base+"[source.raw.filter]\nip_proto = 17\ndst_ports = [\"30490\"]\n"), 0o600)
	const key, says = "source.raw[0].filter: ", "the kernel filter of raw capture (an eBPF socket filter) is not in this build of edr-lite (the ECU build, go build -tags ecu): the full build has it (docs/ecu.md)"
	if code, _, errs := runExe(t, ecu, "config", "check", plain); strings.Contains(errs, "not in this build") || strings.Contains(errs, ".filter") {
		t.Errorf("ECU build: config check without a filter: %d %s", code, errs)
	}
	if _, _, errs := runExe(t, full, "config", "check", filtered); strings.Contains(errs, "not in this build") || strings.Contains(errs, ".filter") {
		t.Errorf("full build: config check with a filter: %s", errs)
	}
	code, _, checked := runExe(t, ecu, "config", "check", filtered)
	if code != exitFail || !strings.Contains(checked, key+says) || strings.Count(checked, "not in this build") != 1 {
		t.Errorf("ECU build: config check with a filter: exit %d, want 1 with %q:\n%s", code, key+says, checked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ecu, "run", "--config", filtered)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitFail || !strings.Contains(stderr.String(), key+says) {
		t.Errorf("ECU build: run with a filter: exit %d, want 1 with %q:\n%s", code, key+says, stderr.String())
	}
}
