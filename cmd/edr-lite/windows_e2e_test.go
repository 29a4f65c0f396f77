package main

// End-to-end tests of what a dump holds, through the built binary: zero
// windows, rules using the recorder's windows, triggers at the last
// message, the operators' own rate limit, merged triggers, and config
// check being run's check.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/shm"
	"golang.org/x/sys/unix"
)

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// recorder is an "edr-lite run" process for a test.
type recorder struct {
	dir, shm, dumps, sock, cfg string
	cmd                        *exec.Cmd
	logs                       *lockedBuffer
}

// startRecorder writes body (TOML after the [recorder] keys the test
// needs: extra recorder keys go in recorderKeys) and runs the recorder,
// which is stopped at the end of the test. start lets the caller start
// the process itself (to pin it to a CPU); nil means cmd.Start.
func startRecorder(t *testing.T, recorderKeys, body string, start func(*exec.Cmd) error) *recorder {
	t.Helper()
	dir := t.TempDir()
	r := &recorder{dir: dir, shm: filepath.Join(dir, "shm"), dumps: filepath.Join(dir, "dumps"), sock: filepath.Join(dir, "edr.sock"),
		cfg: filepath.Join(dir, "edr.toml"), logs: &lockedBuffer{}}
	os.MkdirAll(r.shm, 0o700)
	src := fmt.Sprintf("[recorder]\ndump_dir = %q\ncache_size = \"32MiB\"\ntopic_bytes = \"1MiB\"\n%s\n[rotation]\nmin_free_disk = 0\n[[source.shm]]\ndir = %q\n[control]\nsocket = %q\n%s",
		r.dumps, recorderKeys, r.shm, r.sock, body)
	if err := os.WriteFile(r.cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runBin(t, "config", "check", r.cfg); code != 0 {
		t.Fatalf("config check: %d %s %s\n%s", code, out, errs, src)
	}
	r.cmd = exec.Command(edrBinary(t), "run", "--config", r.cfg)
	r.cmd.Stderr = r.logs
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(r.cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			r.cmd.Process.Kill()
		}
	})
	waitFor(t, func() bool { _, err := os.Stat(r.sock); return err == nil }, "the control socket")
	return r
}

// publish publishes on topic every period until stop is closed; payload
// gives each message's bytes.
func publish(t *testing.T, dir, topic string, period time.Duration, stop <-chan struct{}, payload func(i int) []byte) *sync.WaitGroup {
	t.Helper()
	p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.Close()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p.Publish(time.Now().UnixNano(), payload(i))
		}
	}()
	return &wg
}

func constant(b byte) func(int) []byte { return func(int) []byte { return []byte{b} } }

// trigger runs "edr-lite trigger" against r and returns the dump path.
func (r *recorder) trigger(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runBin(t, append([]string{"trigger", "--socket", r.sock}, args...)...)
	if code != 0 {
		t.Fatalf("trigger %v: %d %s %s\nlogs:\n%s", args, code, out, errs, r.logs.String())
	}
	return strings.TrimSpace(out)
}

// infoWindows is the part of "info --json" these tests read.
type infoWindows struct {
	Messages uint64 `json:"messages"`
	Topics   []struct {
		Name         string `json:"name"`
		Messages     uint64 `json:"messages"`
		FirstNs      int64  `json:"first_ns"`
		LastNs       int64  `json:"last_ns"`
		WindowFromNs int64  `json:"window_from_ns"`
		WindowToNs   int64  `json:"window_to_ns"`
		EndShort     string `json:"end_short"`
	} `json:"topics"`
	Triggers []struct {
		Reason      string `json:"reason"`
		Source      string `json:"source"`
		TimeNs      int64  `json:"time_ns"`
		FromNs      int64  `json:"from_ns"`
		ToNs        int64  `json:"to_ns"`
		PostNs      int64  `json:"post_ns"`
		PostSet     bool   `json:"post_set"`
		At          string `json:"at"`
		RequestedNs int64  `json:"requested_ns"`
	} `json:"triggers"`
}

func readWindows(t *testing.T, path string) infoWindows {
	t.Helper()
	code, out, errs := runBin(t, "info", "--json", path)
	if code != 0 {
		t.Fatalf("info --json %s: %d %s", path, code, errs)
	}
	var in infoWindows
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	return in
}

// TestE2EZeroMeansZero (#15.1): "0s" is a zero window in the recorder's
// configuration, a [[topic]] override and "trigger --post", and config
// check accepts and shows it; an unset window is the recorder's.
func TestE2EZeroMeansZero(t *testing.T) {
	r := startRecorder(t, "pre = \"1s\"\npost = \"1s\"\nguard = \"0s\"", "[[topic]]\nmatch = \"b\"\npost = \"0s\"\n", nil)
	if code, out, _ := runBin(t, "config", "check", r.cfg); code != 0 || !strings.Contains(out, "recorder windows: pre 1s, post 1s") {
		t.Errorf("config check: %d %s", code, out)
	}
	stop := make(chan struct{})
	wa := publish(t, r.shm, "a", 5*time.Millisecond, stop, constant(1))
	wb := publish(t, r.shm, "b", 5*time.Millisecond, stop, constant(2))
	defer func() { close(stop); wa.Wait(); wb.Wait() }()
	waitFor(t, func() bool {
		_, out, _ := runBin(t, "status", "--socket", r.sock, "--json")
		return strings.Count(out, `"held_messages":0`) == 0 && strings.Count(out, `"name":`) >= 2
	}, "topics a and b")
	time.Sleep(1200 * time.Millisecond) // fill the 1s pre window

	// the recorder's post (1s) for a, the override's zero for b
	in := readWindows(t, r.trigger(t, "--reason", "topic-zero"))
	T := in.Triggers[0].TimeNs
	for _, tp := range in.Topics {
		switch tp.Name {
		case "a":
			if tp.WindowToNs != T+int64(time.Second) || tp.LastNs <= T {
				t.Errorf("a: window to %+d, last message %+d; want the recorder's 1s post held", tp.WindowToNs-T, tp.LastNs-T)
			}
		case "b":
			if tp.WindowToNs != T || tp.LastNs > T || tp.Messages == 0 {
				t.Errorf("b: window to %+d, last message %+d; want [[topic]] post = 0s: nothing after the trigger", tp.WindowToNs-T, tp.LastNs-T)
			}
		}
	}
	// trigger --post 0s: nothing after the trigger in any topic
	in = readWindows(t, r.trigger(t, "--reason", "trigger-zero", "--post", "0s"))
	tr := in.Triggers[0]
	if !tr.PostSet || tr.PostNs != 0 || tr.ToNs != tr.TimeNs {
		t.Errorf("trigger record %+v, want post set to 0 and the window ending at the trigger", tr)
	}
	for _, tp := range in.Topics {
		if tp.LastNs > tr.TimeNs || tp.Messages == 0 {
			t.Errorf("%s: last message %+d after a --post 0s trigger (%d messages)", tp.Name, tp.LastNs-tr.TimeNs, tp.Messages)
		}
	}
}

// speedPayload encodes a speed in m/s as hard_brake reads it (f32le).
func speedPayload(v float64) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	return b
}

// TestE2EBuiltinRuleUsesRecorderWindows (#15.2): a built-in rule whose
// params set no window dumps with the recorder's pre and post, and config
// check and status say so.
func TestE2EBuiltinRuleUsesRecorderWindows(t *testing.T) {
	r := startRecorder(t, "pre = \"2s\"\npost = \"500ms\"\nguard = \"100ms\"",
		"[[rule]]\nbuiltin = \"hard_brake\"\nparams = { topic = \"vehicle/speed\", decel = \"6\" }\n", nil)
	_, out, _ := runBin(t, "config", "check", r.cfg)
	if !strings.Contains(out, "rule hard_brake: pre 2s (recorder), post 500ms (recorder)") {
		t.Errorf("config check does not show the rule's window:\n%s", out)
	}
	stop := make(chan struct{})
	start := time.Now()
	// 20 m/s for 3s, then braking at 9 m/s²
	w := publish(t, r.shm, "vehicle/speed", 10*time.Millisecond, stop, func(int) []byte {
		el := time.Since(start).Seconds()
		if el < 3 {
			return speedPayload(20)
		}
		return speedPayload(math.Max(0, 20-9*(el-3)))
	})
	defer func() { close(stop); w.Wait() }()
	var dump string
	waitFor(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(r.dumps, "*hard-brake*.pack"))
		if len(m) > 0 {
			dump = m[0]
		}
		return dump != ""
	}, "the hard_brake dump")
	in := readWindows(t, dump)
	tr := in.Triggers[0]
	if tr.Source != "lua" || tr.TimeNs-tr.FromNs != int64(2*time.Second) || tr.ToNs-tr.TimeNs != int64(500*time.Millisecond) {
		t.Errorf("the rule's dump window is -%v..+%v, want the recorder's -2s..+500ms", time.Duration(tr.TimeNs-tr.FromNs), time.Duration(tr.ToNs-tr.TimeNs))
	}
	_, out, _ = runBin(t, "status", "--socket", r.sock)
	if !strings.Contains(out, "pre 2s (recorder) post 500ms (recorder)") {
		t.Errorf("status does not show the rule's window:\n%s", out)
	}
	// #15.11: SIGHUP and "reload" reload a built-in rule (from the binary)
	r.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool {
		return strings.Contains(r.logs.String(), "rules reloaded") || strings.Contains(r.logs.String(), "rule reload")
	},
		"the SIGHUP reload")
	if l := r.logs.String(); strings.Contains(l, "rule reload") || strings.Contains(l, "no such file") {
		t.Errorf("SIGHUP reload of a built-in rule failed:\n%s", l)
	}
	if code, out, errs := runBin(t, "reload", "--socket", r.sock); code != 0 || !strings.Contains(out, "rules reloaded") {
		t.Errorf("reload: %d %s %s", code, out, errs)
	}
}

// TestE2ETriggerAtLast (#15.4): a dump asked for after the producer went
// silent holds its last window with --at last; at now it holds nothing.
func TestE2ETriggerAtLast(t *testing.T) {
	r := startRecorder(t, "pre = \"2s\"\npost = \"500ms\"\nguard = \"100ms\"", "", nil)
	stop := make(chan struct{})
	w := publish(t, r.shm, "sensor/a", 5*time.Millisecond, stop, constant(7))
	waitFor(t, func() bool {
		_, out, _ := runBin(t, "status", "--socket", r.sock, "--json")
		return strings.Contains(out, `"name":"sensor/a"`) && !strings.Contains(out, `"held_messages":0`)
	}, "sensor/a recording")
	time.Sleep(1500 * time.Millisecond)
	close(stop) // the producer goes silent (and away)
	w.Wait()
	time.Sleep(3 * time.Second) // longer than pre + post
	if in := readWindows(t, r.trigger(t, "--reason", "now")); in.Messages != 0 {
		t.Errorf("the dump at now holds %d messages, want none (the producer is silent)", in.Messages)
	}
	path := r.trigger(t, "--reason", "last", "--at", "last")
	in := readWindows(t, path)
	tr := in.Triggers[0]
	if in.Messages < 100 || len(in.Topics) != 1 {
		t.Fatalf("the dump at the last message holds %d messages, want the last ~1.5s (about 300)", in.Messages)
	}
	tp := in.Topics[0]
	if tr.At != "last" || tr.TimeNs != tp.LastNs || tr.RequestedNs-tr.TimeNs < int64(3*time.Second) {
		t.Errorf("trigger %+v, want at=last at the last message %d, asked 3s later", tr, tp.LastNs)
	}
	if tp.LastNs-tp.FirstNs < int64(time.Second) {
		t.Errorf("held %v, want about 1.5s", time.Duration(tp.LastNs-tp.FirstNs))
	}
	if _, out, _ := runBin(t, "info", path); !strings.Contains(out, "at the last message") || !strings.Contains(out, "end: producer_offline") {
		t.Errorf("info does not say how the trigger was anchored and why the window is short:\n%s", out)
	}
}

// TestE2EManualTriggersOwnBudget (#15.7): a rule that spends its budget
// does not eat an operator's trigger; operators have their own limit; a
// refused trigger is answered with the reason and counted.
func TestE2EManualTriggersOwnBudget(t *testing.T) {
	rule := filepath.Join(t.TempDir(), "every.lua")
	os.WriteFile(rule, []byte(`rule { name = "every", topics = { "tick" } }
function on_message(m) trigger { reason = "rule" } end
`), 0o644)
	r := startRecorder(t, "pre = \"200ms\"\npost = \"0s\"\ncoalesce = \"separate\"\nmax_dumps_per_minute = 2\nmax_manual_dumps_per_minute = 1",
		fmt.Sprintf("[[rule]]\nfile = %q\n", rule), nil)
	stop := make(chan struct{})
	w := publish(t, r.shm, "tick", 20*time.Millisecond, stop, constant(1))
	defer func() { close(stop); w.Wait() }()
	type dumps struct {
		RateLimited       uint64 `json:"triggers_rate_limited"`
		ManualRateLimited uint64 `json:"manual_triggers_rate_limited"`
		Written           uint64 `json:"written"`
	}
	status := func() dumps {
		_, out, _ := runBin(t, "status", "--socket", r.sock, "--json")
		var st struct{ Dumps dumps }
		json.Unmarshal([]byte(out), &st)
		return st.Dumps
	}
	waitFor(t, func() bool { return status().RateLimited > 0 }, "the rule to spend its budget")
	if code, out, errs := runBin(t, "trigger", "--socket", r.sock, "--reason", "operator"); code != 0 || !strings.Contains(out, "operator") {
		t.Fatalf("the operator's trigger after the rules spent theirs: %d %s %s", code, out, errs)
	}
	code, _, errs := runBin(t, "trigger", "--socket", r.sock, "--reason", "operator-again")
	if code != 1 || !strings.Contains(errs, "rate limit") || !strings.Contains(errs, "manual") {
		t.Errorf("second manual trigger: exit %d, %s; want 1 with the manual rate limit named", code, errs)
	}
	if st := status(); st.ManualRateLimited != 1 {
		t.Errorf("status counts %d manual triggers refused, want 1", st.ManualRateLimited)
	}
	if !strings.Contains(r.logs.String(), "trigger refused") {
		t.Errorf("the refusal is not logged")
	}
}

// TestE2EMergedTriggerSaysWhere (#15.8): a trigger merged into a dump
// another trigger started prints that dump's path, both reasons, their
// windows and the window covered.
func TestE2EMergedTriggerSaysWhere(t *testing.T) {
	r := startRecorder(t, "pre = \"1s\"\npost = \"1500ms\"\nguard = \"0s\"", "", nil)
	stop := make(chan struct{})
	w := publish(t, r.shm, "sensor/a", 5*time.Millisecond, stop, constant(1))
	defer func() { close(stop); w.Wait() }()
	waitFor(t, func() bool {
		_, out, _ := runBin(t, "status", "--socket", r.sock, "--json")
		return strings.Contains(out, `"name":"sensor/a"`)
	}, "sensor/a")
	if code, _, errs := runBin(t, "trigger", "--socket", r.sock, "--reason", "first", "--no-wait"); code != 0 {
		t.Fatalf("first trigger: %s", errs)
	}
	code, out, errs := runBin(t, "trigger", "--socket", r.sock, "--reason", "second", "--pre", "2s")
	if code != 0 {
		t.Fatalf("second trigger: %d %s", code, errs)
	}
	path := strings.TrimSpace(out)
	if !strings.Contains(path, "_first_") {
		t.Errorf("stdout %q, want the path of the first trigger's dump", path)
	}
	for _, want := range []string{"merged into the dump of trigger 1 (first, command)", "reason first", "reason second",
		"window -1s..+1.5s", "window -2s..+1.5s (override pre=2s)", "  window   ", path} {
		if !strings.Contains(errs, want) {
			t.Errorf("trigger's report lacks %q:\n%s", want, errs)
		}
	}
}

// TestE2EConfigCheckIsRun (#15.10): for configurations run rejects, config
// check rejects them too, with every problem as FILE:LINE: key: what, and
// run prints the same problems.
func TestE2EConfigCheckIsRun(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown builtin": "[[rule]]\nbuiltin = \"hard_brak\"\n",
		"unknown param":   "[[rule]]\nbuiltin = \"hard_brake\"\nparams = { topik = \"vehicle/speed\" }\n",
		"missing file":    fmt.Sprintf("[[rule]]\nfile = %q\n", filepath.Join(dir, "missing.lua")),
		"small cache":     "[recorder]\ncache_size = \"1MiB\"\n",
		"bad glob":        "[[topic]]\nmatch = \"cam[\"\n",
		"group, no port":  "[[source.udp]]\nlisten = \"239.1.1.1\"\ngroup = \"239.1.1.1\"\n",
		"several": `[recorder]
cache_size = "2MiB"
[[topic]]
match = "["
[[rule]]
builtin = "hard_brak"
[[rule]]
file = "/nonexistent/rule.lua"
`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edr.toml")
			src := body
			if !strings.HasPrefix(body, "[recorder]") {
				src = "[recorder]\n" + body
			}
			src = strings.Replace(src, "[recorder]\n", fmt.Sprintf("[recorder]\ndump_dir = %q\n", filepath.Join(dir, "dumps")), 1) +
				"[control]\nsocket = \"\"\n"
			os.WriteFile(path, []byte(src), 0o644)
			code, _, checkErr := runBin(t, "config", "check", path)
			if code != 1 {
				t.Fatalf("config check: exit %d, want 1\n%s", code, src)
			}
			code, _, runErr := runBin(t, "run", "--config", path)
			if code != 1 {
				t.Fatalf("run: exit %d, want 1", code)
			}
			problems := func(s string) []string {
				var out []string
				for _, l := range strings.Split(s, "\n") {
					if strings.HasPrefix(l, path+":") && !strings.Contains(l, ": warning: ") { // check prints warnings too
						out = append(out, l)
					}
				}
				return out
			}
			cp, rp := problems(checkErr), problems(runErr)
			if len(cp) == 0 || strings.Join(cp, "\n") != strings.Join(rp, "\n") {
				t.Errorf("config check says\n%s\nrun says\n%s", checkErr, runErr)
			}
			if name == "several" && len(cp) != 4 {
				t.Errorf("config check reported %d problems, want all 4:\n%s", len(cp), checkErr)
			}
			if name == "small cache" && !strings.Contains(checkErr, "recorder.cache_size: 1MiB cannot hold one topic's ring: recorder.topic_bytes is 4MiB (the default)") {
				t.Errorf("a cache too small does not name the cause:\n%s", checkErr)
			}
		})
	}
}

// pinnedStart starts cmd with its threads pinned to cpu: the child
// inherits the affinity of the thread that forks it.
func pinnedStart(cpu int) func(*exec.Cmd) error {
	return func(cmd *exec.Cmd) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var old, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		defer unix.SchedSetaffinity(0, &old)
		return cmd.Start()
	}
}

// busyLoops runs n shell loops pinned to cpu (processes, so they take no
// Go scheduler slot from the test) until the test ends.
func busyLoops(t *testing.T, cpu, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := pinnedStart(cpu)(cmd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
}

// TestE2ECaptureNeverEarly (#15.5): with busy loops pinned to the
// recorder's CPU, no datagram's capture time is earlier than the send time
// its sender wrote into it (a coarse clock refreshed by a goroutine was
// tens of ms early under such load).
func TestE2ECaptureNeverEarly(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: the sender runs beside the loaded one")
	}
	addr := freeUDPAddr(t)
	busyLoops(t, 0, 3)
	r := startRecorder(t, "pre = \"10s\"\npost = \"0s\"", fmt.Sprintf("[[source.udp]]\nlisten = %q\ntopic = \"load/udp\"\n", addr), pinnedStart(0))
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// the sender stays off the loaded CPU
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(1)
	unix.SchedSetaffinity(0, &set)
	var b [16]byte
	for i := 0; i < 3000; i++ {
		binary.LittleEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
		c.Write(b[:])
		if i%3 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	runtime.UnlockOSThread()
	time.Sleep(200 * time.Millisecond)
	path := r.trigger(t, "--reason", "load", "--topics", "load/udp")
	code, out, errs := runBin(t, "cat", path, "--jsonl")
	if code != 0 {
		t.Fatalf("cat: %s", errs)
	}
	n, early, worst := 0, 0, int64(0)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			TS   int64  `json:"ts"`
			Data []byte `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Data) < 8 {
			t.Fatalf("cat --jsonl line %q: %v", line, err)
		}
		sent := int64(binary.LittleEndian.Uint64(m.Data))
		n++
		if m.TS < sent {
			early++
			worst = max(worst, sent-m.TS)
		}
	}
	if n < 1000 {
		t.Fatalf("the dump holds %d datagrams, want most of the 3000 sent", n)
	}
	if early > 0 {
		t.Errorf("%d of %d datagrams were stamped before they were sent (up to %v early)", early, n, time.Duration(worst))
	}
}

// freeUDPAddr returns a loopback address with a free UDP port.
func freeUDPAddr(t *testing.T) string {
	t.Helper()
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LocalAddr().String()
}
