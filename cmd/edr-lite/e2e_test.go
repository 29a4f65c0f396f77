package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// edrBinary builds the edr-lite binary once per test run.
func edrBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test builds the binary; skipped in -short mode")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edr-lite-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "edr-lite")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// removeBinary removes the directories edrBinary and ecuBinary built the
// binaries in.
func removeBinary() {
	for _, p := range []string{binPath, ecuPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
}

func runBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runExe(t, edrBinary(t), args...)
}

// runExe runs the binary exe with args and returns its exit status, stdout
// and stderr.
func runExe(t *testing.T, exe string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

type infoJSON struct {
	Path     string `json:"path"`
	Messages uint64 `json:"messages"`
	StartNs  int64  `json:"start_ns"`
	EndNs    int64  `json:"end_ns"`
	Topics   []struct {
		Name     string `json:"name"`
		Messages uint64 `json:"messages"`
		Bytes    uint64 `json:"bytes"`
		FirstNs  int64  `json:"first_ns"`
		LastNs   int64  `json:"last_ns"`
	} `json:"topics"`
	Triggers []struct {
		Reason string `json:"reason"`
		TimeNs int64  `json:"time_ns"`
		Source string `json:"source"`
		Rule   string `json:"rule"`
	} `json:"triggers"`
}

func readInfoJSON(t *testing.T, path string) infoJSON {
	t.Helper()
	code, out, errs := runBin(t, "info", "--json", path)
	if code != 0 {
		t.Fatalf("info --json %s: %d %s", path, code, errs)
	}
	var in infoJSON
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("info --json output: %v\n%s", err, out)
	}
	return in
}

// TestDemoEndToEnd runs "edr-lite demo" as a user would and checks the dump
// with info, verify (also on a corrupted copy) and recover (on a cut copy).
func TestDemoEndToEnd(t *testing.T) {
	dir := t.TempDir()
	path, out := liveDemoDump(t) // "edr-lite demo --dir D --duration 5s", one dump
	if !strings.Contains(out, path) {
		t.Fatalf("demo wrote %v; stdout:\n%s", path, out)
	}
	dumps := []string{path}
	in := readInfoJSON(t, dumps[0])
	if len(in.Triggers) != 1 || in.Triggers[0].Reason != "hard-brake" || in.Triggers[0].Source != "lua" || in.Triggers[0].Rule != "hard_brake" {
		t.Errorf("triggers = %+v", in.Triggers)
	}
	want := map[string]uint64{"vehicle/speed": 300, "vehicle/brake_pedal": 150, "vehicle/imu": 600, "camera/front": 90, "vehicle/calibration": 1}
	got := map[string]uint64{}
	for _, tp := range in.Topics {
		got[tp.Name] = tp.Messages
	}
	for name, min := range want {
		if got[name] < min {
			t.Errorf("topic %s: %d messages, want >= %d (pre 3s + post 2s at its rate)", name, got[name], min)
		}
	}
	if d := time.Duration(in.EndNs - in.StartNs); d < 4*time.Second || d > 6*time.Second {
		t.Errorf("dumped window %v, want ~5s (3s pre + 2s post)", d)
	}
	if code, out, _ := runBin(t, "verify", dumps[0]); code != 0 {
		t.Errorf("verify demo dump: %d\n%s", code, out)
	}
	b, _ := os.ReadFile(dumps[0])
	bad := filepath.Join(dir, "corrupt.pack")
	c := append([]byte(nil), b...)
	c[len(c)/2] ^= 0xff
	os.WriteFile(bad, c, 0o644)
	if code, out, _ := runBin(t, "verify", bad); code != 1 || !strings.Contains(out, "offset") {
		t.Errorf("verify corrupted copy: exit %d\n%s", code, out)
	}
	cut := filepath.Join(dir, "cut.pack.tmp")
	os.WriteFile(cut, b[:len(b)*2/3], 0o644)
	rec := filepath.Join(dir, "recovered.pack")
	if code, out, errs := runBin(t, "recover", cut, "-o", rec); code != 0 {
		t.Fatalf("recover: %d %s %s", code, out, errs)
	}
	if code, out, _ := runBin(t, "verify", rec); code != 0 {
		t.Errorf("recovered copy does not verify: %s", out)
	}
}

// TestRunTriggerStatus runs "edr-lite run" with a configuration, publishes
// through a real shm producer, triggers over the control socket and checks
// the dump holds the window.
func TestRunTriggerStatus(t *testing.T) {
	dir := t.TempDir()
	shmDir := filepath.Join(dir, "shm")
	dumpDir := filepath.Join(dir, "dumps")
	sock := filepath.Join(dir, "edr.sock")
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
cache_size = "32MiB"
pre = "2s"
post = "500ms"
guard = "100ms"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = %q
[control]
socket = %q
`, dumpDir, shmDir, sock)), 0o644)
	if code, out, errs := runBin(t, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %s %s", out, errs)
	}
	os.MkdirAll(shmDir, 0o700)
	cmd := exec.Command(edrBinary(t), "run", "--config", cfg)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "control socket")

	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/a", Type: ingest.Named("u32")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			buf[0] = byte(i)
			p.Publish(time.Now().UnixNano(), buf)
		}
	}()
	waitFor(t, func() bool {
		_, out, _ := runBin(t, "status", "--socket", sock, "--json")
		return strings.Contains(out, `"name":"sensor/a"`) && !strings.Contains(out, `"held_messages":0`)
	}, "topic sensor/a in status")
	time.Sleep(2500 * time.Millisecond) // let the ring fill the 2s pre window
	before := time.Now()
	code, out, errs := runBin(t, "trigger", "--socket", sock, "--reason", "operator-test", "--tag", "e2e")
	close(stop)
	wg.Wait()
	if code != 0 {
		t.Fatalf("trigger: %d %s %s\nlogs:\n%s", code, out, errs, logs.String())
	}
	path := strings.TrimSpace(out)
	if !strings.HasPrefix(path, dumpDir) || !strings.Contains(path, "operator-test") {
		t.Fatalf("trigger printed %q", path)
	}
	if time.Since(before) < 500*time.Millisecond {
		t.Errorf("trigger returned after %v, before the 500ms post window passed", time.Since(before))
	}
	in := readInfoJSON(t, path)
	if len(in.Triggers) != 1 || in.Triggers[0].Source != "command" || len(in.Topics) != 1 {
		t.Fatalf("info = %+v", in)
	}
	// the producer publishes every ~5 ms (less often on a loaded machine):
	// what matters is that the whole window is there, checked by the span
	if in.Topics[0].Messages < 20 {
		t.Errorf("dump holds %d messages of sensor/a, want the 2.5s window's worth", in.Topics[0].Messages)
	}
	if span := time.Duration(in.Topics[0].LastNs - in.Topics[0].FirstNs); span < 2*time.Second {
		t.Errorf("dump spans %v of sensor/a, want the 2s pre + 0.5s post window", span)
	}
	code, out, _ = runBin(t, "status", "--socket", sock)
	if code != 0 || !strings.Contains(out, "1 written") || !strings.Contains(out, "sensor/a") {
		t.Errorf("status: %d\n%s", code, out)
	}
	checkGolden(t, "status.txt", scrubStatusText(out, dir))
	if code, out, errs := runBin(t, "status", "--socket", sock, "--json"); code != 0 {
		t.Errorf("status --json: %d %s", code, errs)
	} else {
		checkGolden(t, "status.json", scrubStatusJSON(t, out, dir))
	}
	// SIGUSR1: a manual dump, recorded with source "signal"
	cmd.Process.Signal(syscall.SIGUSR1)
	waitFor(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(dumpDir, "*_manual_*.pack"))
		return len(m) == 1
	}, "the SIGUSR1 dump")
	m, _ := filepath.Glob(filepath.Join(dumpDir, "*_manual_*.pack"))
	if in := readInfoJSON(t, m[0]); len(in.Triggers) != 1 || in.Triggers[0].Source != "signal" {
		t.Errorf("SIGUSR1 dump triggers = %+v", in.Triggers)
	}
	cmd.Process.Signal(syscall.SIGHUP) // no rules: logged, the recorder goes on
	if code, _, errs := runBin(t, "status", "--socket", sock); code != 0 {
		t.Fatalf("status after SIGHUP: %d %s", code, errs)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run exited with %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop on SIGTERM")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind after stop")
	}
	if code, _, errs := runBin(t, "trigger", "--socket", sock); code != 1 || !strings.Contains(errs, "no recorder") {
		t.Errorf("trigger without a recorder: %d %s", code, errs)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
