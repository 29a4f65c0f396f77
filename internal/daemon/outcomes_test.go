package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/shm"
)

// syncBuffer is a log destination safe for the daemon's goroutines.
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

// TestFailedDumpReachesEveryHook: a dump that is not written (refused for
// low disk) reaches the exec hook (with EDR_DUMP_STATUS and EDR_DUMP_ERROR,
// no path), the Go hook, Lua's on_dump_finished (d.status, d.error) and the
// log.
func TestFailedDumpReachesEveryHook(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Rotation.MinFreeDisk = 1 << 60
	cfg.Control.HTTP = ""
	hookOut := filepath.Join(dir, "hook.out")
	writeFile(t, cfg.Hooks.Exec[0], "#!/bin/sh\necho \"args=$# status=$EDR_DUMP_STATUS reasons=$EDR_DUMP_REASONS error=$EDR_DUMP_ERROR\" >> "+hookOut+"\n")
	writeFile(t, cfg.Rules[0].File, `
rule { name = "watcher", topics = { "none" } }
function on_message(m) end
function on_dump_finished(d) log("dump finished", d.status, d.error) end
`)
	var logs syncBuffer
	var mu sync.Mutex
	var goHook []dump.Result
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil)), OnDump: func(r dump.Result) {
		mu.Lock()
		goHook = append(goHook, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	p, err := shm.NewProducer(cfg.Sources.SHM[0].Dir, shm.ProducerOptions{Name: "imu"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFor(t, "the imu topic", func() bool { p.Publish(1, []byte("x")); return len(d.Status().Topics) == 1 })
	_, res, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "doomed"}, true)
	if err == nil || res.Status != dump.StatusRefused {
		t.Fatalf("trigger: %v, %+v; want a refused dump", err, res)
	}
	waitFor(t, "the exec hook", func() bool { b, _ := os.ReadFile(hookOut); return len(b) > 0 })
	b, _ := os.ReadFile(hookOut)
	if !strings.HasPrefix(string(b), "args=0 status=refused reasons=doomed error=dump: not enough free disk") {
		t.Errorf("exec hook got %q", b)
	}
	waitFor(t, "the Lua and Go hooks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(goHook) == 1 && strings.Contains(logs.String(), "dump finished")
	})
	l := logs.String()
	if !strings.Contains(l, "refused") || !strings.Contains(l, `msg="dump not written" status=refused`) {
		t.Errorf("logs lack the refused dump:\n%s", l)
	}
	for _, line := range strings.Split(l, "\n") {
		if strings.Contains(line, "dump finished") && (!strings.Contains(line, "refused") || !strings.Contains(line, "not enough free disk")) {
			t.Errorf("Lua's on_dump_finished saw %q, want d.status and d.error", line)
		}
	}
	if goHook[0].Status != dump.StatusRefused || goHook[0].Err == nil {
		t.Errorf("Go hook got %+v", goHook[0])
	}
}

// TestReloadBuiltinRule: reload (and so SIGHUP) works for a built-in rule,
// which has no file on disk.
func TestReloadBuiltinRule(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Rules = []config.Rule{{Name: "hard_brake", Params: map[string]string{"decel": "7"}}}
	cfg.Control.HTTP = ""
	d := startDaemon(t, cfg)
	if err := d.Reload(); err != nil {
		t.Fatalf("reload of a built-in rule: %v", err)
	}
	st := d.Status().Rules[0]
	if st.Name != "hard_brake" || st.Reloads != 1 || st.ReloadError != "" {
		t.Errorf("rule status after reload: %+v", st)
	}
}

// TestRuleWindowsInStatus: status says which window each rule's dumps use
// and whose it is.
func TestRuleWindowsInStatus(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Recorder.Pre = config.Duration(5 * time.Second)
	cfg.Recorder.Post = config.Duration(2 * time.Second)
	cfg.Rules = []config.Rule{{Name: "hard_brake"}, {Name: "threshold", Params: map[string]string{"name": "hot", "topic": "t", "post": "0s"}}}
	cfg.Control.HTTP = ""
	d := startDaemon(t, cfg)
	rs := d.Status().Rules
	if len(rs) != 2 || rs[0].PreS != 5 || rs[0].PostS != 2 || rs[0].PreFrom != "recorder" || rs[0].PostFrom != "recorder" ||
		rs[1].PreS != 5 || rs[1].PreFrom != "recorder" || rs[1].PostS != 0 || rs[1].PostFrom != "rule" {
		t.Errorf("rule windows: %+v", rs)
	}
}

// TestUDPTopicNamesAndBuffers: a second UDP listener changes no topic name
// (no channel unless configured); two listeners naming one topic are
// refused by the check; the receive buffer is the default's.
func TestUDPTopicNamesAndBuffers(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Sources.SHM = nil
	cfg.Rules = nil
	cfg.Hooks.Exec = nil
	cfg.Control = config.Control{}
	a, b := freeUDP(t), freeUDP(t)
	cfg.Sources.UDP = []config.UDPSource{{Listen: a, Topic: "radar/{dport}"}, {Listen: b, Topic: "lidar", Channel: "front"}}
	d := startDaemon(t, cfg)
	send := func(to string) {
		c, err := net.Dial("udp", to)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("x"))
	}
	_, port, _ := net.SplitHostPort(a)
	waitFor(t, "both topics", func() bool {
		send(a)
		send(b)
		return len(d.Status().Topics) == 2
	})
	names := map[string]bool{}
	for _, tp := range d.Status().Topics {
		n := tp.Name
		if tp.Channel != "" {
			n += "#" + tp.Channel
		}
		names[n] = true
	}
	if !names["radar/"+port] || !names["lidar#front"] {
		t.Errorf("topics %v, want radar/%s (no channel) and lidar#front", names, port)
	}
	if os.Geteuid() == 0 {
		if n, err := d.udps[0].RcvBuf(); err != nil || n != 2*capture.DefaultRcvBuf {
			t.Errorf("receive buffer %d (%v), want the default %d (reported doubled)", n, err, capture.DefaultRcvBuf)
		}
	}
	cfg2 := testConfig(t, t.TempDir())
	cfg2.Sources.UDP = []config.UDPSource{{Listen: ":7000", Topic: "radar"}, {Listen: ":7001", Topic: "radar"}}
	if err := Check(cfg2); err == nil || !strings.Contains(err.Error(), "source.udp[1].channel") {
		t.Errorf("two listeners naming one topic: %v", err)
	}
}

// TestTwoSourcesOneTopicRefused: when two listeners could name the same
// topic and do (templates the check cannot resolve), the second one's
// topic is refused at discovery, naming the first, instead of two writers
// sharing a single-writer ring.
func TestTwoSourcesOneTopicRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Sources.SHM = nil
	cfg.Rules = nil
	cfg.Hooks.Exec = nil
	cfg.Control = config.Control{}
	a, b := freeUDP(t), freeUDP(t)
	cfg.Sources.UDP = []config.UDPSource{{Listen: a, Topic: "udp/{src}"}, {Listen: b, Topic: "udp/{src}"}}
	var logs syncBuffer
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	for _, to := range []string{a, b} {
		c, err := net.Dial("udp", to)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the datagram to "+to, func() bool {
			c.Write([]byte("x"))
			for _, s := range d.Status().Sources {
				if s.Name == to && s.Messages+s.Errors > 0 {
					return true
				}
			}
			return false
		})
		c.Close()
	}
	st := d.Status()
	if len(st.Topics) != 1 || st.Sources[1].Errors == 0 {
		t.Errorf("topics %+v, sources %+v: want one topic, the second source's datagrams unmapped", st.Topics, st.Sources)
	}
}

// freeUDP returns a loopback address with a free UDP port for a UDP
// source. Under qemu-user the test skips: it does not emulate
// setsockopt(SO_RXQ_OVFL), which every UDP source sets (docs/arm.md).
func freeUDP(t *testing.T) string {
	t.Helper()
	testutil.SkipUnderEmulation(t, "qemu-user does not emulate setsockopt(SO_RXQ_OVFL), which a UDP source sets")
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LocalAddr().String()
}

// TestDumpWrittenLogAndMetricsNameLosses: the "dump written" line reports
// every loss by cause (not lost=0 when the source lost messages), and
// /metrics counts age eviction as eviction, not as dropped.
func TestDumpWrittenLogAndMetricsNameLosses(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Rules = nil
	cfg.Hooks.Exec = nil
	var logs syncBuffer
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	p, err := shm.NewProducer(cfg.Sources.SHM[0].Dir, shm.ProducerOptions{Name: "imu"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// 2 s of messages with a 1.2 s retention: some are evicted by age
	waitFor(t, "age eviction", func() bool {
		p.Publish(1, []byte("x"))
		time.Sleep(5 * time.Millisecond)
		ts := d.Status().Topics
		return len(ts) == 1 && ts[0].EvictedAge > 0
	})
	rec := d.Recorder()
	rec.Lost(rec.Topics()[0].ID, rec.Now(), 68) // the source lost 68 inside the window
	_, res, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "losses"}, true)
	if err != nil || res.LostAtSource != 68 {
		t.Fatalf("trigger: %v %+v", err, res)
	}
	waitFor(t, "the dump written line", func() bool { return strings.Contains(logs.String(), "dump written") })
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "dump written") {
			line = l
		}
	}
	for _, want := range []string{"overwritten=0", "lost_at_source=68", "oversize=0", "skipped_busy=0"} {
		if !strings.Contains(line, want) {
			t.Errorf("dump written line lacks %q: %s", want, line)
		}
	}
	if !HTTPBuilt {
		return // the ECU build has no /metrics
	}
	m := httpGetDaemon(t, d, "/metrics")
	if strings.Contains(m, `cause="evicted_age"`) || strings.Contains(m, `cause="evicted_size"`) {
		t.Errorf("/metrics counts eviction as dropped")
	}
	if !strings.Contains(m, `edr_topic_evicted_total{cause="age",topic="imu"}`) || !strings.Contains(m, `edr_topic_dropped_total{cause="lost_at_source",topic="imu"} 68`) {
		t.Errorf("/metrics lacks evicted age or lost_at_source:\n%s", m)
	}
}
