package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/shm"
)

// testConfig is a small recorder: one shm source, a rule file, a control
// socket, HTTP on a free loopback port (where the build has it) and an
// exec hook.
func testConfig(t *testing.T, dir string) *config.File {
	t.Helper()
	f, err := config.Parse("test", []byte(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	f.Recorder.DumpDir = filepath.Join(dir, "dumps")
	f.Recorder.CacheSize = 16 << 20
	f.Recorder.TopicBytes = 1 << 20
	f.Recorder.Pre = config.Duration(time.Second)
	f.Recorder.Post = config.Duration(100 * time.Millisecond)
	f.Recorder.Guard = config.Duration(10 * time.Millisecond)
	f.Rotation.MinFreeDisk = 0
	f.Sources.SHM = []config.SHMSource{{Dir: filepath.Join(dir, "shm")}}
	f.Control.Socket = filepath.Join(dir, "edr.sock")
	if HTTPBuilt {
		f.Control.HTTP = "127.0.0.1:0"
		f.Control.PProf = true
	}
	rule := filepath.Join(dir, "button.lua")
	writeFile(t, rule, `
rule { name = "button", topics = { "driver/button" }, pre = "1s", post = "100ms", cooldown = "1h" }
function on_message(m)
  if m:u8(0) ~= 0 then trigger { reason = "button-pressed" } end
end
`)
	f.Rules = []config.Rule{{File: rule}}
	hookOut := filepath.Join(dir, "hook.out")
	hook := filepath.Join(dir, "hook.sh")
	writeFile(t, hook, "#!/bin/sh\necho \"$1 $EDR_DUMP_REASONS\" >> "+hookOut+"\n")
	os.Chmod(hook, 0o755)
	f.Hooks.Exec = []string{hook}
	return f
}

// startDaemon builds and starts a recorder from cfg, stopped at the end of
// the test.
func startDaemon(t *testing.T, cfg *config.File) *Daemon {
	t.Helper()
	d, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		d.Stop()
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDaemonRuleTriggerHookHTTPReload(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	d := startDaemon(t, cfg)

	p, err := shm.NewProducer(cfg.Sources.SHM[0].Dir, shm.ProducerOptions{Name: "driver/button"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFor(t, "the button topic", func() bool { return len(d.Status().Topics) == 1 })
	// a live rule starts at the newest message of a topic it discovers
	// (polled every 500ms), so press until it has seen a press
	hookOut := filepath.Join(dir, "hook.out")
	waitFor(t, "the rule to fire and the exec hook to run", func() bool {
		p.Publish(0, []byte{0})
		p.Publish(0, []byte{1})
		b, _ := os.ReadFile(hookOut)
		return len(b) > 0
	})
	b, _ := os.ReadFile(hookOut)
	fields := strings.Fields(string(b))
	if len(fields) != 2 || fields[1] != "button-pressed" || !strings.HasPrefix(fields[0], cfg.Recorder.DumpDir) {
		t.Fatalf("hook got %q", b)
	}
	if _, err := os.Stat(fields[0]); err != nil {
		t.Fatalf("hook ran before the dump existed: %v", err)
	}
	st := d.Status()
	if st.Dumps.Written != 1 || len(st.Rules) != 1 || st.Rules[0].TriggersFired != 1 {
		t.Errorf("status = %+v", st)
	}

	// HTTP: Prometheus metrics and the status document (not in the ECU build)
	if HTTPBuilt {
		get := func(path string) string {
			resp, err := http.Get("http://" + d.HTTPAddr() + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %s", path, resp.Status)
			}
			return string(body)
		}
		m := get("/metrics")
		for _, want := range []string{`edr_topic_messages_total{topic="driver/button"} `, `edr_topic_held_seconds{topic="driver/button"}`, `edr_dumps_total{outcome="written"} 1`, `edr_rule_triggers_total{rule="button"} 1`} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		var doc Status
		if err := json.Unmarshal([]byte(get("/status")), &doc); err != nil || len(doc.Topics) != 1 {
			t.Errorf("/status: %v %+v", err, doc)
		}
		if !strings.Contains(get("/debug/pprof/"), "goroutine") {
			t.Error("/debug/pprof/ missing")
		}
	}

	// control socket: operator trigger waits for the finalized file
	resp, err := control.Do(context.Background(), cfg.Control.Socket, &control.Request{Op: "trigger", Reason: "op"})
	if err != nil || !strings.Contains(resp.Path, "op") {
		t.Fatalf("control trigger: %+v %v", resp, err)
	}
	if _, err := os.Stat(resp.Path); err != nil {
		t.Fatalf("trigger answered before the file existed: %v", err)
	}
	if _, err := control.Do(context.Background(), cfg.Control.Socket, &control.Request{Op: "trigger", Pre: "soon"}); err == nil {
		t.Error("bad duration accepted")
	}

	// reload: a broken rule file keeps the old version running
	writeFile(t, cfg.Rules[0].File, "rule { name = \"button\" \nthis is not lua")
	if err := d.Reload(); err == nil {
		t.Fatal("reload of a broken rule reported no error")
	}
	before := d.Status().Rules[0].Messages
	waitFor(t, "the old rule to keep running", func() bool {
		p.Publish(0, []byte{0})
		st := d.Status().Rules[0]
		return !st.Disabled && st.ReloadError != "" && st.Messages > before
	})
}

func TestNewRollsBackOnError(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Rules = []config.Rule{{File: filepath.Join(dir, "missing.lua")}}
	if _, err := New(Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "rule[0]") {
		t.Fatalf("err = %v, want one naming rule[0]", err)
	}
	// everything acquired before the failure was released: the socket is
	// free for a second recorder
	cfg = testConfig(t, dir)
	d, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatalf("second New after a rolled-back one: %v", err)
	}
	d.Stop()
}

func TestRecorderConfigMapping(t *testing.T) {
	f, _ := config.Parse("x", []byte(`
[recorder]
guard = 0
busy_skip_data = true
reorder = true
reorder_window = "50ms"
[[topic]]
match = "cam/*"
only_front = true
keep_last = 3
[[source.raw]]
interface = "lo"
[source.raw.filter]
dst_ports = ["30490-30500", "7400"]
`))
	ec, dc, err := RecorderConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if !ec.BusySkipData || dc.ReorderWindow != 50*time.Millisecond {
		t.Errorf("busy_skip_data / reorder not mapped: %+v", ec)
	}
	if ec.Guard == nil || *ec.Guard != 0 || len(ec.Topics) != 1 || !ec.Topics[0].OnlyFront || ec.Topics[0].KeepLast != 3 {
		t.Errorf("engine config = %+v", ec)
	}
	flt, err := rawFilter(f.Sources.Raw[0].Filter)
	if err != nil || len(flt.DstPorts) != 2 || flt.DstPorts[0].Lo != 30490 || flt.DstPorts[0].Hi != 30500 || flt.DstPorts[1].Lo != 7400 {
		t.Errorf("filter = %+v, %v", flt, err)
	}
	if _, err := portRanges("dst_ports", []string{"9-1"}); err == nil {
		t.Error("reversed range accepted")
	}
}

// TestMCAPDumps: with format = "mcap" the recorder writes .mcap dumps that
// info reads back with the trigger and every message.
func TestMCAPDumps(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Recorder.Format = "mcap"
	cfg.Recorder.Compression = "zstd"
	cfg.Rules = nil
	cfg.Control.HTTP = ""
	cfg.Hooks.Exec = nil
	d := startDaemon(t, cfg)
	p, err := shm.NewProducer(cfg.Sources.SHM[0].Dir, shm.ProducerOptions{Name: "imu", Type: ingest.Named("edr.test.IMU")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFor(t, "the imu topic", func() bool { return len(d.Status().Topics) == 1 })
	for i := range 100 {
		p.Publish(int64(i+1), []byte{byte(i), 1, 2, 3})
	}
	waitFor(t, "100 messages", func() bool { return d.Status().Topics[0].Written == 100 })
	_, res, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "mcap-test"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Path, ".mcap") || res.Messages != 100 {
		t.Fatalf("dump = %+v", res)
	}
	in, err := dumpfile.ReadInfo(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if in.Format != dumpfile.FormatMCAP || in.Messages != 100 || len(in.Topics) != 1 || in.Topics[0].Type != "edr.test.IMU" {
		t.Errorf("info = %+v", in)
	}
	if len(in.Triggers) != 1 || in.Triggers[0].Reason != "mcap-test" {
		t.Errorf("triggers = %+v", in.Triggers)
	}
	n := 0
	err = dumpfile.Walk(res.Path, func(m *dumpfile.Msg) error {
		if m.Topic != "imu" || len(m.Data) != 4 || m.Data[0] != byte(n) {
			t.Errorf("message %d = %+v", n, m)
		}
		n++
		return nil
	})
	if err != nil || n != 100 {
		t.Errorf("walk: %d messages, %v", n, err)
	}
	checkWithMCAPCore(t, res.Path, "imu", 100, 400)
}

// checkWithMCAPCore reads path with the reference TypeScript reader
// (@mcap/core, installed by .ci/run) and checks one topic's counts, indexed
// and streaming. It skips when node or the npm packages are missing.
func checkWithMCAPCore(t *testing.T, path, topic string, messages, bytes int) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "mcap", "testdata", "node"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("needs node for the @mcap/core reference reader: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@mcap", "core")); err != nil {
		t.Skipf("needs `npm ci` in %s: %v", dir, err)
	}
	cmd := exec.Command("node", "validate.mjs", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node validate.mjs: %v", err)
	}
	type stat struct{ Messages, Bytes int }
	var res map[string]struct {
		Error   string
		Indexed struct{ Topics map[string]stat }
		Stream  struct{ Topics map[string]stat }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("validate.mjs output: %v\n%s", err, out)
	}
	r := res[path]
	if r.Error != "" {
		t.Fatalf("@mcap/core rejects %s: %s", path, r.Error)
	}
	want := stat{messages, bytes}
	if r.Indexed.Topics[topic] != want || r.Stream.Topics[topic] != want {
		t.Errorf("@mcap/core reads %s: indexed %+v, stream %+v; want %+v", topic, r.Indexed.Topics[topic], r.Stream.Topics[topic], want)
	}
}

// TestUDPSourceFromConfig: a [[source.udp]] listener records datagrams under
// its topic template and type; datagrams over its max_packet are not.
func TestUDPSourceFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Sources.SHM = nil
	cfg.Rules = nil
	cfg.Hooks.Exec = nil
	cfg.Control = config.Control{}
	addr := freeUDP(t)
	cfg.Sources.UDP = []config.UDPSource{{Listen: addr, Topic: "radar/{dport}", MaxPacket: 16,
		TypeKeys: config.TypeKeys{Type: ingest.Packed("radar.Frame", "char s[11]")}}}
	d := startDaemon(t, cfg)
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, port, _ := net.SplitHostPort(addr)
	waitFor(t, "10 datagrams recorded", func() bool {
		c.Write([]byte("radar-frame"))
		c.Write([]byte("radar-frame-over-16-bytes"))
		for _, tp := range d.Status().Topics {
			if tp.Name == "radar/"+port && tp.Written >= 10 {
				if tp.Type != "radar.Frame" || tp.Encoding != ingest.EncodingPacked || tp.TypeError != "" {
					t.Fatalf("topic type %q %q (%s), want the listener's packed radar.Frame", tp.Encoding, tp.Type, tp.TypeError)
				}
				return true
			}
		}
		return false
	})
	// Nothing is sent any more: the counts settle with every 11-byte
	// datagram recorded and every 25-byte one (over max_packet) counted,
	// one of each per round.
	waitFor(t, "the source's counts to settle", func() bool {
		st := d.Status()
		if len(st.Sources) != 1 || st.Sources[0].Kind != "udp" {
			t.Fatalf("sources = %+v", st.Sources)
		}
		src := st.Sources[0]
		for _, tp := range st.Topics {
			if tp.Name == "radar/"+port {
				return tp.Written == src.Messages && src.Errors == src.Messages
			}
		}
		return false
	})
}

// TestSHMSourceLimitsAndLeftovers: max_topics is the recorder's topic table
// and the segments each shm source follows (the default agrees with
// engine.DefaultMaxTopics), heartbeat_timeout reaches the consumer, and
// leftover segments show in status and /metrics.
func TestSHMSourceLimitsAndLeftovers(t *testing.T) {
	def, err := config.Parse("default", []byte(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	if def.Recorder.MaxTopics != engine.DefaultMaxTopics {
		t.Fatalf("default max_topics %d, engine.DefaultMaxTopics %d", def.Recorder.MaxTopics, engine.DefaultMaxTopics)
	}
	dir := t.TempDir()
	f := testConfig(t, dir)
	f.Recorder.MaxTopics = 2
	f.Sources.SHM[0].Heartbeat = config.Duration(300 * time.Millisecond)
	shmDir := f.Sources.SHM[0].Dir
	left, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "left", Capacity: shm.MinCapacity})
	if err != nil {
		t.Fatal(err)
	}
	left.Publish(1, []byte("old"))
	left.Close()
	for i := range 3 {
		p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "live/" + string(rune('a'+i)), Capacity: shm.MinCapacity})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
	}
	os.MkdirAll(f.Recorder.DumpDir, 0o700)
	time.Sleep(100 * time.Millisecond) // the leftover is older than the recorder
	d := startDaemon(t, f)
	waitFor(t, "1 leftover of 1 message, 1 refused segment, 2 topics", func() bool {
		st := d.Status()
		return len(st.Sources) == 1 && st.Sources[0].LeftoverSegments == 1 && st.Sources[0].LeftoverMessages == 1 &&
			st.Sources[0].RefusedSegments == 1 && len(st.Topics) == 2
	})
	if got := d.shms[0].Options().HeartbeatTimeout; got != 300*time.Millisecond {
		t.Errorf("heartbeat_timeout reached the consumer as %v", got)
	}
	if d.shms[0].Stats().Doorbell != true {
		t.Error("no doorbell")
	}
}
