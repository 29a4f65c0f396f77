package main

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/shm"
)

// The rosbag2 flags of replay, each through the built binary: --exclude,
// --remap, --playback-duration, --loop-count, --clock, --delay, and
// --start-paused with replay-ctl on --control.

// drainSeg reads a segment file the replay left in dir (--keep-segments).
func drainSeg(t *testing.T, dir, topic string) *countSink {
	t.Helper()
	var s countSink
	if _, err := shm.DrainFile(filepath.Join(dir, shm.SegmentFileName(topic, "")), &s, shm.ConsumerOptions{}); err != nil {
		t.Fatalf("segment %s: %v", topic, err)
	}
	return &s
}

func TestReplayExcludeRemapDuration(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	seg := filepath.Join(dir, "segs")
	code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+seg, "--asfast", "--keep-segments", "--exclude", "camera/*",
		"--remap", "vehicle/speed:=sim/speed", "--playback-duration", "495ms")
	if code != 0 || !strings.Contains(out, "replayed 50 messages") || !strings.Contains(out, "as fast as possible, 1 pass)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if s := drainSeg(t, seg, "sim/speed"); s.n != 50 || s.info.Type.Schema.Name != "f32" || s.first[0] != 0 {
		t.Errorf("sim/speed: %d messages, type %q", s.n, s.info.Type.Schema.Name)
	}
	m, _ := filepath.Glob(filepath.Join(seg, "*"+shm.SegmentSuffix))
	if len(m) != 1 {
		t.Errorf("segments %v: want only sim/speed (camera excluded, speed renamed)", m)
	}
	f := func(wantCode int, wantErr string, args ...string) {
		t.Helper()
		code, _, errs := runBin(t, append([]string{"replay", dump, "-o", "discard"}, args...)...)
		if code != wantCode || !strings.Contains(errs, wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errs, wantCode, wantErr)
		}
	}
	f(2, "remap nope: the dumps hold no such topic (they hold camera/front, vehicle/speed)", "--remap", "nope=x")
	f(2, "--remap \"x\": want OLD=NEW", "--remap", "x")
	f(2, "give one of them", "--duration", "1s", "--playback-duration", "1s")
	f(1, "--exclude 'camera/*,vehicle/*' leaves no topic; ", "--exclude", "camera/*,vehicle/*")
}

func TestReplayLoopCountAndClock(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	seg := filepath.Join(dir, "segs")
	// 100 Hz clock over 990 ms of message time: ticks at 0, 10, ..., 990 ms
	code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+seg, "--asfast", "--keep-segments", "--topics", "vehicle/speed",
		"--loop-count", "3", "--clock", "100", "--clock-topic", "sim/clock", "--capacity", "64KiB")
	if code != 0 || !strings.Contains(out, "replayed 300 messages") || !strings.Contains(out, "3 passes") ||
		!strings.Contains(out, "clock topic: 300 ticks") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	c := drainSeg(t, seg, "sim/clock")
	if c.n != 300 || c.info.Type.Schema.Name != "edr.Clock(i64le ns)" {
		t.Fatalf("clock: %d ticks, type %q", c.n, c.info.Type)
	}
	if got := int64(binary.LittleEndian.Uint64(c.first)); got != t0 || c.gens[1] != t0+10e6 || c.gens[100] != t0 {
		t.Errorf("clock starts at %d, then %d, second pass %d; want %d, +10ms, again %d", got, c.gens[1], c.gens[100], t0, t0)
	}
	if code, _, errs := runBin(t, "replay", dump, "-o", "discard", "--clock", "0"); code != 2 || !strings.Contains(errs, "want a rate in Hz") {
		t.Errorf("--clock 0: exit %d %s", code, errs)
	}
}

// TestReplayDelay: --delay holds the first message back at least that long
// (a lower bound: it cannot come early however loaded the machine is).
func TestReplayDelay(t *testing.T) {
	dump := writeTestDump(t, t.TempDir(), "a.pack")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd := exec.Command(edrBinary(t), "replay", dump, "-o", "udp:"+conn.LocalAddr().String(), "--topics", "camera/front", "--asfast", "--delay", "1s")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = conn.Read(make([]byte, 2000))
	waited := time.Since(start)
	if werr := cmd.Wait(); err != nil || werr != nil {
		t.Fatalf("read %v, exit %v\n%s", err, werr, out.String())
	}
	if waited < time.Second {
		t.Errorf("first datagram after %v, before the 1s delay", waited)
	}
}

// TestReplayStartPausedControl: a replay started paused writes nothing
// until replay-ctl steps it (exactly the messages asked for), reports its
// state, and plays the rest on resume.
func TestReplayStartPausedControl(t *testing.T) {
	dir := t.TempDir()
	dump := writeTestDump(t, dir, "a.pack")
	sock := filepath.Join(dir, "replay.sock")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd := exec.Command(edrBinary(t), "replay", dump, "-o", "udp:"+conn.LocalAddr().String(), "--topics", "vehicle/speed",
		"--map", "vehicle/speed="+conn.LocalAddr().String(), "--asfast", "--start-paused", "--control", sock)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, func() bool {
		code, _, _ := runBin(t, "replay-ctl", "status", "--socket", sock)
		return code == 0
	}, "the replay's control socket")
	code, st, errs := runBin(t, "replay-ctl", "status", "--socket", sock)
	if code != 0 || st != "paused: 0 messages, 0B written; at not started\n" {
		t.Fatalf("status: %d %q %s", code, st, errs)
	}
	buf := make([]byte, 100)
	read := func() int {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return n
	}
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Read(buf); err == nil {
		t.Fatal("a datagram arrived while the replay was paused")
	}
	if code, _, errs := runBin(t, "replay-ctl", "step", "--socket", sock, "--steps", "3"); code != 0 {
		t.Fatalf("step: %s", errs)
	}
	for i := 0; i < 3; i++ {
		if read(); buf[0] != byte(i) {
			t.Errorf("stepped datagram %d carries %d", i, buf[0])
		}
	}
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Read(buf); err == nil {
		t.Fatal("step --steps 3 let a fourth message through")
	}
	code, js, _ := runBin(t, "replay-ctl", "status", "--socket", sock, "--json")
	var rs struct {
		Paused     bool   `json:"paused"`
		Messages   uint64 `json:"messages"`
		PositionNs int64  `json:"position_ns"`
	}
	if err := json.Unmarshal([]byte(js), &rs); code != 0 || err != nil || !rs.Paused || rs.Messages != 3 || rs.PositionNs != t0+20e6 {
		t.Errorf("status --json: %d %q %v", code, js, err)
	}
	if code, _, errs := runBin(t, "replay-ctl", "resume", "--socket", sock); code != 0 {
		t.Fatalf("resume: %s", errs)
	}
	for i := 3; i < 100; i++ {
		if read(); buf[0] != byte(i) {
			t.Fatalf("datagram %d carries %d", i, buf[0])
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "replayed 100 messages") {
		t.Fatalf("exit %v\n%s", err, out.String())
	}
	if code, _, errs := runBin(t, "replay-ctl", "status", "--socket", sock); code != 1 || !strings.Contains(errs, "no replay is listening on") {
		t.Errorf("replay-ctl after the replay ended: %d %s", code, errs)
	}
	if code, _, errs := runBin(t, "replay", dump, "-o", "discard", "--start-paused"); code != 2 || !strings.Contains(errs, "needs --control") {
		t.Errorf("--start-paused without --control: %d %s", code, errs)
	}
	if code, _, errs := runBin(t, "replay-ctl", "jump", "--socket", sock); code != 2 || !strings.Contains(errs, "unknown action") {
		t.Errorf("replay-ctl jump: %d %s", code, errs)
	}
}
