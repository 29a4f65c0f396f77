package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/shm"
)

// runningDaemon is an "edr-lite run" started by a test, with its logs.
type runningDaemon struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	sock string
	dir  string
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDaemon writes files (names relative to a new test directory) and
// cfg ($DIR standing for that directory) and runs the recorder on it until
// the control socket DIR/edr.sock answers. The shm directory DIR/shm is
// created.
func startDaemon(t *testing.T, cfg string, files map[string]string, setup func(*exec.Cmd)) *runningDaemon {
	t.Helper()
	// 0600: some configurations hold a secret (http_token), which run
	// warns about in a file every local user can read
	return startDaemonMode(t, cfg, 0o600, files, setup)
}

// startDaemonMode is startDaemon with the configuration file written at
// mode.
func startDaemonMode(t *testing.T, cfg string, mode os.FileMode, files map[string]string, setup func(*exec.Cmd)) *runningDaemon {
	t.Helper()
	dir := t.TempDir()
	d := &runningDaemon{logs: &syncBuffer{}, sock: filepath.Join(dir, "edr.sock"), dir: dir}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "edr.toml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(cfg, "$DIR", dir)), mode); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "shm"), 0o700)
	d.cmd = exec.Command(edrBinary(t), "run", "--config", path)
	d.cmd.Stderr = d.logs
	if setup != nil {
		setup(d.cmd)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		d.cmd.Wait()
		if t.Failed() {
			t.Logf("recorder logs:\n%s", d.logs.String())
		}
	})
	waitFor(t, func() bool {
		code, _, _ := runBin(t, "status", "--socket", d.sock)
		return code == 0
	}, "the control socket")
	return d
}

type ruleState struct {
	Name          string `json:"name"`
	TriggersFired uint64 `json:"triggers_fired"`
	Messages      uint64 `json:"messages"`
	Disabled      bool   `json:"disabled"`
	Why           string `json:"why"`
	ReloadError   string `json:"reload_error"`
	CallNs        int64  `json:"call_ns"`
	Stuck         bool   `json:"stuck"`
}

func (d *runningDaemon) rules(t *testing.T) []ruleState {
	t.Helper()
	code, out, errs := runBin(t, "status", "--socket", d.sock, "--json")
	if code != 0 {
		t.Fatalf("status --json: %d %s", code, errs)
	}
	var st struct {
		Rules []ruleState `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st.Rules
}

// publish publishes on topic every 5 ms until stop is closed.
func publishUntil(t *testing.T, shmDir, topic string, stop chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.Close()
		buf := make([]byte, 16)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			p.Publish(time.Now().UnixNano(), buf)
		}
	}()
}

// httpAddr is the address the recorder logged for its HTTP listener.
func (d *runningDaemon) httpAddr(t *testing.T) string {
	t.Helper()
	var addr string
	waitFor(t, func() bool {
		for _, line := range strings.Split(d.logs.String(), "\n") {
			if i := strings.Index(line, "addr=http://"); i >= 0 {
				addr = strings.Fields(line[i+len("addr=http://"):])[0]
				return true
			}
		}
		return false
	}, "the http address in the logs")
	return addr
}

// TestRunStuckRuleStop: a rule given a huge instruction budget loops in
// its callback; status and /metrics show it stuck; a dump is asked for and
// SIGTERM sent at once: the recorder exits within stop_deadline + 1 s and
// the dump is complete.
func TestRunStuckRuleStop(t *testing.T) {
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "16MiB"
pre = "1s"
post = "300ms"
stop_deadline = "3s"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = "$DIR/shm"
[[rule]]
file = "$DIR/stuck.lua"
instructions = 1000000000000000
[control]
socket = "$DIR/edr.sock"
http = "127.0.0.1:0"
`, map[string]string{"stuck.lua": "rule{name='stuck', topics='sensor/a'}\nfunction on_message(m) while true do end end\n"}, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	publishUntil(t, filepath.Join(d.dir, "shm"), "sensor/a", stop, &wg)
	waitFor(t, func() bool { r := d.rules(t); return len(r) == 1 && r[0].Stuck }, "the rule reported stuck")
	if r := d.rules(t)[0]; r.CallNs < int64(time.Second) || r.Disabled {
		t.Errorf("stuck rule status %+v", r)
	}
	if _, out, _ := runBin(t, "status", "--socket", d.sock); !strings.Contains(out, "STUCK in a callback for") {
		t.Errorf("status text does not show the stuck rule:\n%s", out)
	}
	metrics := httpGet(t, "http://"+d.httpAddr(t)+"/metrics")
	if !strings.Contains(metrics, `edr_rule_stuck{rule="stuck"} 1`) || !strings.Contains(metrics, `edr_rule_call_seconds{rule="stuck"}`) {
		t.Errorf("/metrics does not show the stuck rule:\n%s", grepLines(metrics, "edr_rule"))
	}
	time.Sleep(1200 * time.Millisecond) // let the ring hold the pre window
	if code, out, errs := runBin(t, "trigger", "--socket", d.sock, "--no-wait", "--reason", "before-stop"); code != 0 {
		t.Fatalf("trigger: %s %s", out, errs)
	}
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run exited with %v", err)
		}
	case <-time.After(4 * time.Second): // stop_deadline + 1 s
		t.Fatalf("run did not exit within stop_deadline + 1s of SIGTERM")
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	dumps, _ := filepath.Glob(filepath.Join(d.dir, "dumps", "*before-stop*.pack"))
	if len(dumps) != 1 {
		t.Fatalf("dumps %v", dumps)
	}
	if code, out, _ := runBin(t, "verify", dumps[0]); code != 0 {
		t.Errorf("the dump written at stop does not verify:\n%s", out)
	}
	if in := readInfoJSON(t, dumps[0]); in.Messages == 0 {
		t.Errorf("the dump written at stop is empty")
	}
	// closed to other local users by default
	fi, _ := os.Stat(dumps[0])
	di, _ := os.Stat(filepath.Dir(dumps[0]))
	if fi.Mode().Perm() != 0o640 || di.Mode().Perm() != 0o750 {
		t.Errorf("dump %v in a %v directory, want 0640 in 0750", fi.Mode().Perm(), di.Mode().Perm())
	}
}

// TestConfigCheckHostileValues: values that used to overflow or slip
// through are refused by config check, naming the key.
func TestConfigCheckHostileValues(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"[recorder]\ncache_size = \"8388608TiB\"", "too large"},
		{"[recorder]\ntopic_bytes = \"9223372036854775808\"", "too large"},
		{"[recorder]\ndump_mode = \"0044\"", "recorder.dump_mode"},
		{"[recorder]\ndump_mode = \"rw\"", "recorder.dump_mode"},
		{"[[rule]]\nbuiltin = \"manual\"\ninstructions = -1", "rule[0].instructions"},
	} {
		path := filepath.Join(dir, "c.toml")
		os.WriteFile(path, []byte(c.body+"\n"), 0o644)
		code, out, errs := runBin(t, "config", "check", path)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("config check of %q: exit %d, want 1 naming %q\n%s%s", c.body, code, c.want, out, errs)
		}
	}
}

// TestRunHostileReload: reloading a rule with versions that take over _G
// never takes the recorder down. One that trips the looping __index at
// load is refused with file:line and the old version keeps firing; one
// that trips it at run time is disabled with file:line; status answers
// throughout.
func TestRunHostileReload(t *testing.T) {
	good := "rule{name='r', topics='sensor/a'}\nfunction on_message(m) trigger{reason='v1'} end\n"
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "16MiB"
pre = "1s"
post = "100ms"
max_dumps_per_minute = 0
[rotation]
min_free_disk = 0
max_files = 5
[[source.shm]]
dir = "$DIR/shm"
[[rule]]
file = "$DIR/r.lua"
[control]
socket = "$DIR/edr.sock"
`, map[string]string{"r.lua": good}, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	publishUntil(t, filepath.Join(d.dir, "shm"), "sensor/a", stop, &wg)
	waitFor(t, func() bool { r := d.rules(t); return len(r) == 1 && r[0].TriggersFired > 0 }, "the rule firing")

	loop := "setmetatable(_G, {__index = function() while true do end end})\n"
	os.WriteFile(filepath.Join(d.dir, "r.lua"), []byte("rule{name='r', topics='sensor/a'}\nfunction on_message(m) end\n"+loop+"local x = not_defined\n"), 0o644)
	code, _, errs := runBin(t, "reload", "--socket", d.sock)
	if code != 1 || !strings.Contains(errs, "r.lua:3") || !strings.Contains(errs, "old version keeps running") {
		t.Errorf("reload of a version looping at load: exit %d\n%s", code, errs)
	}
	fired := d.rules(t)[0].TriggersFired
	waitFor(t, func() bool { return d.rules(t)[0].TriggersFired > fired }, "the old version firing after the failed reload")
	if r := d.rules(t)[0]; r.ReloadError == "" || r.Disabled {
		t.Errorf("after the failed reload: %+v", r)
	}
	// SIGHUP takes the same path
	d.cmd.Process.Signal(syscall.SIGHUP)
	fired = d.rules(t)[0].TriggersFired
	waitFor(t, func() bool { return d.rules(t)[0].TriggersFired > fired }, "the old version firing after SIGHUP")

	os.WriteFile(filepath.Join(d.dir, "r.lua"), []byte("rule{name='r', topics='sensor/a'}\n"+loop+"function on_message(m) local y = missing end\n"), 0o644)
	if code, _, errs := runBin(t, "reload", "--socket", d.sock); code != 0 {
		t.Fatalf("reload of a version that loads: %d %s", code, errs)
	}
	waitFor(t, func() bool { return d.rules(t)[0].Disabled }, "the new version disabled at run time")
	if r := d.rules(t)[0]; !strings.Contains(r.Why, "r.lua:2") {
		t.Errorf("disabled without file:line: %+v", r)
	}
	os.WriteFile(filepath.Join(d.dir, "r.lua"), []byte(good), 0o644)
	if code, _, errs := runBin(t, "reload", "--socket", d.sock); code != 0 {
		t.Fatalf("reload of the good version: %d %s", code, errs)
	}
	fired = d.rules(t)[0].TriggersFired
	waitFor(t, func() bool { r := d.rules(t)[0]; return !r.Disabled && r.TriggersFired > fired }, "the good version back")
	if err := d.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the recorder died: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// httpGet fetches url and returns the body; a failure fails the test.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// statusWithin asks the recorder for its status in-process (no process
// start in the measured time) and fails unless it answers within d.
func statusWithin(t *testing.T, sock string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	if _, err := control.Do(ctx, sock, &control.Request{Op: "status"}); err != nil {
		t.Fatalf("status did not answer within %v: %v", d, err)
	}
	t.Logf("status answered in %v", time.Since(start))
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// TestRunControlSocketFloods: the control socket outlives its clients.
// Under a 1024-descriptor limit, 3000 connections held and released leave
// it answering within 1 s; with the limit cut to just above what the
// recorder holds, accept fails with EMFILE, is retried with back-off
// (counted in status), and the socket answers again once the clients go.
func TestRunControlSocketFloods(t *testing.T) {
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[control]
socket = "$DIR/edr.sock"
`, nil, nil)
	pid := d.cmd.Process.Pid
	setLimit := func(n uint64) {
		t.Helper()
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: 1024}, nil); err != nil {
			t.Skipf("prlimit on the recorder: %v", err)
		}
	}
	hold := func(n int) (held []net.Conn) {
		for range n {
			c, err := net.DialTimeout("unix", d.sock, time.Second)
			if err != nil {
				continue // the backlog is full: refused, not held
			}
			held = append(held, c)
		}
		return held
	}
	release := func(cs []net.Conn) {
		for _, c := range cs {
			c.Close()
		}
	}

	base := openFDs(t, pid)
	setLimit(1024)
	held := hold(3000)
	t.Logf("held %d of 3000 connections", len(held))
	if len(held) < control.MaxConns {
		t.Fatalf("only %d connections", len(held))
	}
	release(held)
	statusWithin(t, d.sock, time.Second)

	// The released connections close on the recorder's side a moment after
	// the clients hang up: wait until its descriptor count settles, else
	// the limit cut below would leave room for them.
	n := openFDs(t, pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m := openFDs(t, pid)
		if m == n && m <= base+2 {
			break
		}
		n = m
	}
	setLimit(uint64(n + 2))
	held = hold(200)
	time.Sleep(500 * time.Millisecond) // the accept loop meets EMFILE and backs off
	if err := d.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the recorder died under EMFILE: %v", err)
	}
	release(held)
	statusWithin(t, d.sock, time.Second)
	var st struct {
		Control struct {
			AcceptErrors uint64 `json:"accept_errors"`
		}
	}
	_, out, _ := runBin(t, "status", "--socket", d.sock, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Control.AcceptErrors == 0 {
		t.Errorf("accept errors after EMFILE (limit %d, %d open before): %+v %v", n+2, n, st, err)
	}
	setLimit(1024)
	statusWithin(t, d.sock, time.Second)
}
