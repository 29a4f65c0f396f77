package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/replay"
	"github.com/edr-lite/edr-lite/shm"
)

// The closed loop through the built binary, against the example nodes of
// examples/: the Go node (speed over shm, decision over shm) and the C node
// (speed over UDP, decision over shm with edr_shm.h).

var (
	nodeOnce sync.Once
	nodePath string
	nodeErr  error
)

// brakeNodeBinary builds examples/brake-node once per test run.
func brakeNodeBinary(t *testing.T) string {
	t.Helper()
	bin := edrBinary(t) // skips in -short mode; the node goes next to it
	nodeOnce.Do(func() {
		nodePath = filepath.Join(filepath.Dir(bin), "brake-node")
		if out, err := exec.Command("go", "build", "-o", nodePath, "../../examples/brake-node").CombinedOutput(); err != nil {
			nodeErr = fmt.Errorf("go build brake-node: %v\n%s", err, out)
		}
	})
	if nodeErr != nil {
		t.Fatal(nodeErr)
	}
	return nodePath
}

// brakeLayout is the node's output layout, as the README passes it.
const brakeLayout = "../../examples/brake-node/brake.layout"

// startNode runs a node (its command line in argv, env added to the
// environment) until the test ends, and waits until it says it is ready
// (its first line on stderr, printed once its segments and socket exist).
func startNode(t *testing.T, dir string, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	var mu sync.Mutex
	var logs bytes.Buffer
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		first := true
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if first {
				close(ready)
				first = false
			}
		}
		if first {
			close(ready)
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("node %v: %v\n%s", argv, err, log())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("node %v did not stop on SIGTERM\n%s", argv, log())
		}
		pw.Close()
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("node %v did not start\n%s", argv, log())
	}
}

// speedAt is the speed profile of the recordings: 15 m/s ± 6, crossing the
// node's 18 m/s threshold both ways.
func speedAt(i int) float32 { return 15 + 6*float32(math.Sin(2*math.Pi*float64(i)/150)) }

var (
	recOnce sync.Once
	recPath string
	recErr  error
)

// daemonRecording is the example node's own recording, made as in the
// field: "edr-lite run" records a shm directory where a producer publishes
// the speed at 100 Hz for 3 s and brake-node answers each sample; an
// operator trigger then dumps the window. Made once per test run.
func daemonRecording(t *testing.T) string {
	t.Helper()
	node := brakeNodeBinary(t)
	recOnce.Do(func() { recPath, recErr = makeDaemonRecording(t, node) })
	if recErr != nil {
		t.Fatal(recErr)
	}
	return recPath
}

func makeDaemonRecording(t *testing.T, node string) (string, error) {
	// kept for the other tests, next to the binary (removed with it)
	dir, err := os.MkdirTemp(filepath.Dir(edrBinary(t)), "recording-")
	if err != nil {
		return "", err
	}
	shmDir, dumpDir, sock := filepath.Join(dir, "shm"), filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock")
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
cache_size = "32MiB"
pre = "5s"
post = "200ms"
guard = "100ms"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = %q
[control]
socket = %q
`, dumpDir, shmDir, sock)), 0o644)
	os.MkdirAll(shmDir, 0o700)
	daemon := exec.Command(edrBinary(t), "run", "--config", cfg)
	var logs bytes.Buffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		return "", err
	}
	defer func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
	}()
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "the recorder's control socket")
	nodeCmd := exec.Command(node, "-shm", shmDir)
	if err := nodeCmd.Start(); err != nil {
		return "", err
	}
	defer func() {
		nodeCmd.Process.Signal(syscall.SIGTERM)
		nodeCmd.Wait()
	}()
	waitFor(t, func() bool {
		_, out, _ := runBin(t, "status", "--socket", sock, "--json")
		return strings.Contains(out, `"name":"planner/brake"`)
	}, "planner/brake in the recorder's status")
	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "vehicle/speed", Type: ingest.Named("edr.example.Speed(f32le m/s)")})
	if err != nil {
		return "", err
	}
	next := time.Now()
	for i := 0; i < 300; i++ {
		next = next.Add(10 * time.Millisecond)
		time.Sleep(time.Until(next))
		p.Publish(time.Now().UnixNano(), binary.LittleEndian.AppendUint32(nil, math.Float32bits(speedAt(i))))
	}
	p.Close()
	time.Sleep(300 * time.Millisecond) // the last answers reach the recorder
	code, out, errs := runBin(t, "trigger", "--socket", sock, "--reason", "closed-loop-fixture", "--pre", "5s")
	if code != 0 {
		return "", fmt.Errorf("trigger: %d %s %s\n%s", code, out, errs, logs.String())
	}
	return strings.TrimSpace(out), nil
}

// replayNode runs a closed-loop replay of dump against a fresh Go node
// started with env and args, and returns the exit code and output.
func replayNode(t *testing.T, dump string, env []string, nodeArgs []string, args ...string) (int, string, string) {
	t.Helper()
	return replayNodeAs(t, "--expect", dump, env, nodeArgs, args...)
}

// replayNodeAs is replayNode naming planner/brake with outputs, --expect
// (recorded in the dump) or --collect (a dump of inputs alone).
func replayNodeAs(t *testing.T, outputs, dump string, env []string, nodeArgs []string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	startNode(t, dir, env, append([]string{brakeNodeBinary(t), "-shm", dir}, nodeArgs...)...)
	return runBin(t, append([]string{"replay", dump, "-o", "shm:" + dir, outputs, "planner/brake", "--asfast"}, args...)...)
}

var mismatchLine = regexp.MustCompile(`(?m)^  planner/brake step (\d+) \(planner/brake seq (\d+) at \+[0-9.]+[mµn]?s\): value command: expected ([0-9.e-]+), got ([0-9.e-]+)$`)

// TestClosedLoopExampleNode is issue 22's acceptance: the example node
// replayed against its own recording passes an exact check; a change of
// its threshold fails with a mismatch list naming the step and the field;
// a tolerance check accepts a rounding change and rejects a real change.
func TestClosedLoopExampleNode(t *testing.T) {
	dump := daemonRecording(t)
	in := readInfoJSON(t, dump)
	n := map[string]uint64{}
	for _, tp := range in.Topics {
		n[tp.Name] = tp.Messages
	}
	if n["vehicle/speed"] != 300 || n["planner/brake"] != 300 {
		t.Fatalf("the recording holds %v, want 300 speed samples and 300 decisions", n)
	}

	code, out, errs := replayNode(t, dump, nil, nil)
	if code != 0 || !strings.Contains(out, "ok: 300 outputs on 1 topic(s) match the recording") ||
		!strings.Contains(out, "closed loop (full): 300 inputs") || !strings.Contains(out, "latency from input to output: p50 ") {
		t.Fatalf("full, exact, same node: exit %d\n%s%s", code, out, errs)
	}

	// the threshold moved from 18 to 17 m/s (EDR_BRAKE_THRESHOLD)
	code, out, errs = replayNode(t, dump, []string{"EDR_BRAKE_THRESHOLD=17"}, nil, "--schema", "planner/brake="+brakeLayout)
	ms := mismatchLine.FindAllStringSubmatch(out, -1)
	if code != 1 || len(ms) == 0 || !strings.Contains(out, "FAIL: ") || !strings.Contains(out, "planner/brake decoded with layout brake.layout") {
		t.Fatalf("threshold 17: exit %d, %d mismatch lines\n%s%s", code, len(ms), out, errs)
	}
	for _, m := range ms {
		if m[3] == m[4] {
			t.Errorf("mismatch with equal values: %s", m[0])
		}
	}
	t.Logf("threshold 17: %d mismatches, first %s", len(ms), ms[0][0])
	// without a schema, the layout the node declared, recorded in the
	// dump, names the field (issue 30 item 14; the first differing byte,
	// bytes[8], before)
	code, out, _ = replayNode(t, dump, []string{"EDR_BRAKE_THRESHOLD=17"}, nil)
	if code != 1 || len(mismatchLine.FindAllString(out, -1)) != len(ms) || !strings.Contains(out, "planner/brake decoded with the dump's type x-edr-packed edr.example.Brake") {
		t.Fatalf("threshold 17, no schema: exit %d\n%s", code, out)
	}

	// float64 arithmetic: a rounding change
	code, out, _ = replayNode(t, dump, nil, []string{"-f64"}, "--schema", "planner/brake="+brakeLayout)
	if code != 1 || len(mismatchLine.FindAllString(out, -1)) == 0 {
		t.Fatalf("-f64, exact: exit %d (want 1: the rounding shows)\n%s", code, out)
	}
	code, out, errs = replayNode(t, dump, nil, []string{"-f64"}, "--check", "tolerance", "--schema", "planner/brake="+brakeLayout)
	if code != 0 || !strings.Contains(out, "ok: 300 outputs") {
		t.Fatalf("-f64, tolerance: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = replayNode(t, dump, nil, []string{"-threshold", "17.9"}, "--check", "tolerance", "--schema", "planner/brake="+brakeLayout)
	if code != 1 || len(mismatchLine.FindAllString(out, -1)) == 0 {
		t.Fatalf("threshold 17.9, tolerance: exit %d\n%s", code, out)
	}

	// the report for CI
	code, out, _ = replayNode(t, dump, []string{"EDR_BRAKE_THRESHOLD=17"}, nil, "--schema", "planner/brake="+brakeLayout, "--format", "json")
	var res struct {
		OK         bool `json:"ok"`
		Inputs     int  `json:"inputs"`
		Mismatches []struct {
			Topic, Kind, Field, Expected, Got string
			Step, Seq                         int
		} `json:"mismatches"`
		Latency struct {
			Samples uint64 `json:"samples"`
			P99Ns   int64  `json:"p99_ns"`
		} `json:"latency"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 1 || err != nil || res.OK || res.Inputs != 300 || len(res.Mismatches) == 0 ||
		res.Mismatches[0].Field != "command" || res.Mismatches[0].Step < 1 || res.Latency.Samples != 300 || res.Latency.P99Ns <= 0 {
		t.Fatalf("--format json: exit %d, %v\n%s", code, err, out)
	}
}

// TestClosedLoopModes: input-only records a new dump (inputs and the
// node's outputs) that a full replay passes; output-only re-emits the
// recorded outputs with their original timing and reports the timing
// error.
func TestClosedLoopModes(t *testing.T) {
	dump := daemonRecording(t)
	rec := filepath.Join(t.TempDir(), "session.pack")
	code, out, errs := replayNode(t, dump, nil, []string{"-threshold", "16"}, "--mode", "input-only", "--record", rec)
	if code != 0 || !strings.Contains(out, "closed loop (input-only): 300 inputs") || !strings.Contains(out, "recorded to "+rec) {
		t.Fatalf("input-only: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runBin(t, "verify", rec); code != 0 {
		t.Fatalf("the input-only recording does not verify:\n%s", out)
	}
	code, out, _ = replayNode(t, rec, nil, []string{"-threshold", "16"})
	if code != 0 || !strings.Contains(out, "ok: 300 outputs") {
		t.Fatalf("full against the input-only recording: exit %d\n%s", code, out)
	}
	if code, out, _ := replayNode(t, rec, nil, nil); code != 1 {
		t.Fatalf("the input-only recording (threshold 16) passes with threshold 18:\n%s", out)
	}

	// output-only: the recorded decisions, at their recorded pace, to UDP
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var want [][]byte
	var times []int64
	if err := dumpfile.Walk(dump, func(m *dumpfile.Msg) error {
		if m.Topic == "planner/brake" {
			want, times = append(want, bytes.Clone(m.Data)), append(times, m.TimeNs)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, len(want))
	go func() {
		defer close(got)
		buf := make([]byte, 100)
		for range want {
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			got <- bytes.Clone(buf[:n])
		}
	}()
	start := time.Now()
	code, out, errs = runBin(t, "replay", dump, "-o", "udp:"+conn.LocalAddr().String(), "--expect", "planner/brake", "--mode", "output-only")
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "output-only: re-emitted 300 recorded outputs") || !strings.Contains(out, "timing error: p50 ") || !strings.Contains(out, ", p99 ") {
		t.Fatalf("output-only: exit %d\n%s%s", code, out, errs)
	}
	if span := time.Duration(times[len(times)-1] - times[0]); took < span {
		t.Errorf("output-only took %v, less than the %v the recorded outputs span", took, span)
	}
	i := 0
	for d := range got {
		if !bytes.Equal(d, want[i]) {
			t.Fatalf("datagram %d: %x, want %x", i, d, want[i])
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d datagrams of %d", i, len(want))
	}
}

// inputsDump writes n speed samples and n obstacle distances, interleaved
// 5 ms apart: a node's decision depends on which came last.
func inputsDump(t *testing.T, n int) string {
	p := filepath.Join(t.TempDir(), "inputs.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		ts := t0 + int64(i)*10e6
		w.Add("vehicle/speed", "", nil, ts, ts, binary.LittleEndian.AppendUint32(nil, math.Float32bits(speedAt(i*3))))
		w.Add("vehicle/obstacle", "", nil, ts+5e6, ts+5e6, binary.LittleEndian.AppendUint32(nil, math.Float32bits(60-float32(i))))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// brakeOutputs returns the planner/brake payloads of a dump, concatenated.
func brakeOutputs(t *testing.T, path string) (data []byte, n int) {
	t.Helper()
	if err := dumpfile.Walk(path, func(m *dumpfile.Msg) error {
		if m.Topic == "planner/brake" {
			data = append(data, m.Data...)
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return data, n
}

// TestLockstepDeterministic is issue 22's lockstep acceptance: a node that
// sleeps a random time per message, fed speed and obstacle samples it
// combines, records byte-identical outputs in 20 lockstep runs; free
// running, the interleaving of its inputs shows in its outputs.
func TestLockstepDeterministic(t *testing.T) {
	const n = 40
	dump := inputsDump(t, n)
	run := func(lockstep bool, i int) ([]byte, int) {
		out := filepath.Join(t.TempDir(), fmt.Sprintf("run%d.pack", i))
		// lockstep: a step may take long on a loaded machine, the end
		// needs no quiet wait (every input is answered); free running: the
		// outputs end after a quiet --timeout
		args := []string{"--mode", "input-only", "--record", out, "--timeout", "1s"}
		if lockstep {
			args = []string{"--mode", "input-only", "--record", out, "--timeout", "20s", "--lockstep", "ack:planner/brake"}
		}
		code, stdout, errs := replayNodeAs(t, "--collect", dump, nil, []string{"-jitter", "1ms"}, args...)
		if code != 0 {
			t.Fatalf("run %d (lockstep %v): exit %d\n%s%s", i, lockstep, code, stdout, errs)
		}
		return brakeOutputs(t, out)
	}
	first, m := run(true, 0)
	if m != 2*n {
		t.Fatalf("lockstep run 0: %d outputs, want %d", m, 2*n)
	}
	for i := 1; i < 20; i++ {
		if got, m := run(true, i); !bytes.Equal(got, first) {
			for j := 0; j < min(len(got), len(first))/13; j++ {
				if !bytes.Equal(got[13*j:13*j+13], first[13*j:13*j+13]) {
					t.Errorf("output %d: %x, run 0 %x", j, got[13*j:13*j+13], first[13*j:13*j+13])
				}
			}
			t.Fatalf("lockstep run %d (%d outputs) differs from run 0", i, m)
		}
	}
	differ := 0
	for i := 0; i < 5; i++ {
		got, m := run(false, i)
		if m != 2*n {
			t.Fatalf("free-running run %d: %d outputs, want %d", i, m, 2*n)
		}
		if !bytes.Equal(got, first) {
			differ++
		}
	}
	t.Logf("free running: %d of 5 runs differ from the lockstep outputs; lockstep: 20 of 20 identical", differ)
	if differ == 0 {
		t.Fatal("free running gave the lockstep outputs in all 5 runs: the test cannot tell lockstep from free running")
	}
}

// TestClosedLoopCNode: the C node (speed over UDP, decision over shm with
// edr_shm.h) replayed against the Go node's recording passes an exact
// check: both compute the same bytes.
func TestClosedLoopCNode(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("needs a C compiler (cc): %v", err)
	}
	dump := daemonRecording(t)
	bin := filepath.Join(t.TempDir(), "brake_node")
	if out, err := exec.Command(cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "-ffp-contract=off",
		"-I../../shm/include", "-o", bin, "../../examples/brake-node-c/brake_node.c", "-lm").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	f := func(threshold string) (int, string) {
		port := freeUDPPort(t)
		dir := t.TempDir()
		startNode(t, dir, nil, bin, dir, fmt.Sprint(port), threshold)
		code, out, errs := runBin(t, "replay", dump, "-o", fmt.Sprintf("udp:127.0.0.1:%d", port), "--map", fmt.Sprintf("vehicle/speed=127.0.0.1:%d", port),
			"--expect", "planner/brake", "--listen", "shm:"+dir, "--rate", "4", "--schema", "planner/brake="+brakeLayout)
		return code, out + errs
	}
	if code, out := f("18"); code != 0 || !strings.Contains(out, "ok: 300 outputs") {
		t.Fatalf("C node, threshold 18: exit %d\n%s", code, out)
	}
	if code, out := f("17"); code != 1 || len(mismatchLine.FindAllString(out, -1)) == 0 {
		t.Fatalf("C node, threshold 17: exit %d\n%s", code, out)
	}
}

func freeUDPPort(t *testing.T) int {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestClosedLoopListenUDP: the Go node sends its decisions as datagrams;
// the loop collects them with its UDP source (--listen udp:ADDR=TOPIC).
func TestClosedLoopListenUDP(t *testing.T) {
	dump := daemonRecording(t)
	port := freeUDPPort(t)
	code, out, errs := replayNode(t, dump, nil, []string{"-udp-out", fmt.Sprintf("127.0.0.1:%d", port)},
		"--listen", fmt.Sprintf("udp:127.0.0.1:%d=planner/brake", port))
	if code != 0 || !strings.Contains(out, "ok: 300 outputs") || !strings.Contains(out, "outputs from udp:127.0.0.1:") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

func TestClosedLoopUsage(t *testing.T) {
	dump := writeTestDump(t, t.TempDir(), "a.pack")
	f := func(want int, wantErr string, args ...string) {
		t.Helper()
		code, _, errs := runBin(t, append([]string{"replay", dump}, args...)...)
		if code != want || !strings.Contains(errs, wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errs, want, wantErr)
		}
	}
	seg := "shm:" + t.TempDir()
	f(2, "--mode \"half\"", "-o", seg, "--expect", "vehicle/speed", "--mode", "half")
	f(2, "--check is for a closed loop", "-o", seg, "--check", "tolerance")
	f(2, "--listen is required", "-o", "udp:127.0.0.1:9", "--expect", "vehicle/speed")
	f(2, "-o discard feeds no system under test", "-o", "discard", "--expect", "vehicle/speed")
	f(2, "--lockstep \"always\"", "-o", seg, "--expect", "vehicle/speed", "--lockstep", "always")
	f(2, "expect planner/* matches no topic of the dumps (they hold camera/front, vehicle/speed)", "-o", seg, "--expect", "planner/*")
	f(2, "needs its schema", "-o", seg, "--expect", "vehicle/speed", "--check", "tolerance")
	f(2, "--listen is not for --mode output-only", "-o", seg, "--expect", "vehicle/speed", "--mode", "output-only", "--listen", seg)
	f(2, "--align nearest needs --window", "-o", seg, "--expect", "vehicle/speed", "--align", "nearest")
	f(2, "a schema is given for x, which is not an expected topic", "-o", seg, "--expect", "vehicle/speed", "--schema", "x=json")
	f(2, "--format \"xml\"", "-o", seg, "--expect", "vehicle/speed", "--format", "xml")
	f(2, "no such file", "-o", seg, "--expect", "vehicle/speed", "--schema", "vehicle/speed=/nonexistent.layout")
	checks := filepath.Join(t.TempDir(), "checks.toml")
	os.WriteFile(checks, []byte("[[check]]\nmode = \"loose\"\n"), 0o644)
	f(2, `checks.toml: check 1 (topic ""): mode = "loose"`, "-o", seg, "--expect", "vehicle/speed", "--checks", checks)
}

// splitInputs writes the speed and the obstacle samples of inputsDump(n)
// into two dumps, one per topic.
func splitInputs(t *testing.T, n int) (speed, obstacle string) {
	dir := t.TempDir()
	speed, obstacle = filepath.Join(dir, "speed.pack"), filepath.Join(dir, "obstacle.pack")
	ws, err := pack.Create(speed, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	wo, err := pack.Create(obstacle, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		ts := t0 + int64(i)*10e6
		ws.Add("vehicle/speed", "", nil, ts, ts, binary.LittleEndian.AppendUint32(nil, math.Float32bits(speedAt(i*3))))
		wo.Add("vehicle/obstacle", "", nil, ts+5e6, ts+5e6, binary.LittleEndian.AppendUint32(nil, math.Float32bits(60-float32(i))))
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wo.Close(); err != nil {
		t.Fatal(err)
	}
	return speed, obstacle
}

// TestLockstepTwoPlayers: the speed and the obstacle samples replayed by
// two players (--player) coordinated by one orchestrator, in lockstep
// with a jittery node: every run records the same outputs as one player
// replaying both in one dump.
func TestLockstepTwoPlayers(t *testing.T) {
	const n = 30
	merged := inputsDump(t, n)
	speed, obstacle := splitInputs(t, n)
	run := func(mk func(dir string) []string) []byte {
		t.Helper()
		dir := t.TempDir()
		args := mk(dir)
		startNode(t, dir, nil, brakeNodeBinary(t), "-shm", dir, "-jitter", "1ms")
		out := filepath.Join(t.TempDir(), "run.pack")
		code, stdout, errs := runBin(t, append(args, "-o", "shm:"+dir, "--collect", "planner/brake", "--asfast", "--mode", "input-only",
			"--lockstep", "ack:planner/brake", "--record", out, "--timeout", "20s")...)
		if code != 0 || !strings.Contains(stdout, fmt.Sprintf("closed loop (input-only): %d inputs", 2*n)) {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, errs)
		}
		got, m := brakeOutputs(t, out)
		if m != 2*n {
			t.Fatalf("%v: %d outputs", args, m)
		}
		return got
	}
	want := run(func(string) []string { return []string{"replay", merged} })
	for i := 0; i < 5; i++ {
		if got := run(func(dir string) []string { return []string{"replay", speed, "--player", "shm:" + dir + "=" + obstacle} }); !bytes.Equal(got, want) {
			t.Fatalf("two players, run %d: outputs differ from one player's", i)
		}
	}
}

// TestLiveAndDumpPlayers: a dump replayed in real time while obstacle
// distances arrive live over UDP (--live): the node answers both, and the
// recorded session holds the live inputs in their place on the timeline.
func TestLiveAndDumpPlayers(t *testing.T) {
	speed, _ := splitInputs(t, 40)
	dir := t.TempDir()
	startNode(t, dir, nil, brakeNodeBinary(t), "-shm", dir)
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "session.pack")
	// --rate 0.1: the 400 ms of speed samples take 4 s, so the live
	// samples sent once the replay is under way arrive while it plays even
	// on a loaded machine
	cmd := exec.Command(edrBinary(t), "replay", speed, "-o", "shm:"+dir, "--collect", "planner/brake", "--mode", "input-only",
		"--live", fmt.Sprintf("udp:127.0.0.1:%d=vehicle/obstacle", port), "--record", out, "--timeout", "500ms", "--rate", "0.1")
	var stdout lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// under way: the live player's socket is bound and the speed segment
	// is there (a sleep raced the process's start on a busy machine)
	seg := filepath.Join(dir, shm.SegmentFileName("vehicle/speed", ""))
	var segSeen, udpSeen bool
	for deadline := time.Now().Add(60 * time.Second); !segSeen || !udpSeen; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(seg); err == nil {
			segSeen = true
		}
		udpSeen = udpSeen || replay.UDPBound(port) != 0
		select {
		case err := <-exited:
			t.Fatalf("the replay ended (%v) before it was seen under way (segment %v, live socket %v):\n%s", err, segSeen, udpSeen, stdout.String())
		default:
		}
		if time.Now().After(deadline) {
			names, _ := os.ReadDir(dir)
			t.Fatalf("the replay not under way after 60 s (segment %s seen %v, live socket on %d seen %v); %d files in %s:\n%s", seg, segSeen, port, udpSeen, len(names), dir, stdout.String())
		}
	}
	for i := 0; i < 5; i++ {
		c.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(50-i))))
		time.Sleep(20 * time.Millisecond)
	}
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	if err := <-exited; err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "closed loop (input-only): 45 inputs") {
		t.Fatalf("%s", stdout.String())
	}
	var topics []string
	var last int64
	if err := dumpfile.Walk(out, func(m *dumpfile.Msg) error {
		topics = append(topics, m.Topic)
		if m.TimeNs < last && m.Topic != "planner/brake" {
			t.Errorf("%s at %d after %d", m.Topic, m.TimeNs, last)
		}
		last = max(last, m.TimeNs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, tp := range topics {
		count[tp]++
	}
	if count["vehicle/obstacle"] != 5 || count["vehicle/speed"] != 40 || count["planner/brake"] != 45 {
		t.Fatalf("session holds %v", count)
	}
	// the live samples arrived between the first and the last speed sample
	first, lastSpeed := -1, -1
	for i, tp := range topics {
		if tp == "vehicle/speed" {
			if first < 0 {
				first = i
			}
			lastSpeed = i
		}
	}
	for i, tp := range topics {
		if tp == "vehicle/obstacle" && (i < first || i > lastSpeed) {
			t.Errorf("live sample at position %d, outside the replayed speed samples (%d..%d)", i, first, lastSpeed)
		}
	}
}

// TestReplayPlayersOpenLoop: --player without a closed loop replays each
// player's dumps to its own output on one timeline.
func TestReplayPlayersOpenLoop(t *testing.T) {
	speed, obstacle := splitInputs(t, 20)
	d1, d2 := t.TempDir(), t.TempDir()
	code, out, errs := runBin(t, "replay", speed, "-o", "shm:"+d1, "--player", "shm:"+d2+"="+obstacle, "--rate", "4", "--keep-segments")
	if code != 0 || !strings.Contains(out, "replayed 20 messages") || !strings.Contains(out, "player shm:"+d2+" ("+obstacle+"): 20 messages, 0 dropped") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if s := drainSeg(t, d2, "vehicle/obstacle"); s.n != 20 {
		t.Errorf("the second player published %d messages", s.n)
	}
	if code, _, errs := runBin(t, "replay", speed, "-o", "shm:"+d1, "--player", "shm:"+d2+"="+obstacle, "--loop"); code != 2 || !strings.Contains(errs, "--loop is for one player") {
		t.Errorf("--loop with --player: %d %s", code, errs)
	}
	if code, _, errs := runBin(t, "replay", speed, "-o", "shm:"+d1, "--live", "udp:127.0.0.1:1"); code != 2 || !strings.Contains(errs, "want udp:HOST:PORT=TOPIC") {
		t.Errorf("--live without a topic: %d %s", code, errs)
	}
}

// TestClosedLoopChecksFile: per-topic checks from a TOML file (a layout
// next to it) and from a JSON file, against the node computing in float64.
func TestClosedLoopChecksFile(t *testing.T) {
	dump := daemonRecording(t)
	dir := t.TempDir()
	layout, err := os.ReadFile(brakeLayout)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "brake.layout"), layout, 0o644)
	toml := filepath.Join(dir, "checks.toml")
	os.WriteFile(toml, []byte(`
[[check]]
topic = "planner/*"
mode = "tolerance"
abs = 1e-5
fields = ["command", "brake"]
layout = "brake.layout"
`), 0o644)
	code, out, errs := replayNode(t, dump, nil, []string{"-f64"}, "--checks", toml)
	if code != 0 || !strings.Contains(out, "planner/brake  tolerance") || !strings.Contains(out, "ok: 300 outputs") {
		t.Fatalf("TOML checks, -f64: exit %d\n%s%s", code, out, errs)
	}
	js := filepath.Join(dir, "checks.json")
	os.WriteFile(js, []byte(`{"check": [{"topic": "planner/brake", "mode": "exact", "align": "time", "layout": "brake.layout"}]}`), 0o644)
	code, out, _ = replayNode(t, dump, nil, []string{"-threshold", "17"}, "--checks", js)
	if code != 1 || !strings.Contains(out, "planner/brake  exact  time") || len(mismatchLine.FindAllString(out, -1)) == 0 {
		t.Fatalf("JSON checks, threshold 17: exit %d\n%s", code, out)
	}
}

// TestLoadSchemaProtobuf: --schema TOPIC=FILE@pkg.Message reads a protobuf
// FileDescriptorSet, and its decoder serves a tolerance check.
func TestLoadSchemaProtobuf(t *testing.T) {
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{
		"brake.proto": "syntax = \"proto3\"; package planner; message Brake { float speed = 1; float command = 2; bool brake = 3; }"})}}
	files, err := c.Compile(context.Background(), "brake.proto")
	if err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(files[0])}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	desc := filepath.Join(t.TempDir(), "planner.desc")
	os.WriteFile(desc, b, 0o644)
	d, from, err := loadSchema(desc+"@planner.Brake", "")
	if err != nil || from != "protobuf planner.desc planner.Brake" {
		t.Fatalf("%v %q", err, from)
	}
	md := files[0].Messages().ByName("Brake")
	enc := func(cmd float32) []byte {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("speed"), protoreflect.ValueOfFloat32(20))
		m.Set(md.Fields().ByName("command"), protoreflect.ValueOfFloat32(cmd))
		out, _ := proto.Marshal(m)
		return out
	}
	ms, err := replay.CompareOutputs(replay.Check{Mode: replay.CheckTolerance, Abs: 1e-3, Decoder: d}, "planner/brake",
		[]replay.OutputMessage{{Data: enc(0.5)}, {Data: enc(0.7)}}, []replay.OutputMessage{{Data: enc(0.5002)}, {Data: enc(0.8)}})
	if err != nil || len(ms) != 1 || ms[0].Field != "command" || ms[0].Expected != "0.7" || ms[0].Got != "0.8" {
		t.Fatalf("%v %+v", err, ms)
	}
	if _, _, err := loadSchema(desc+"@planner.Nope", ""); err == nil {
		t.Error("an unknown message name gave no error")
	}
}
