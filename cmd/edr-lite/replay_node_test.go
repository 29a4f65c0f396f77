package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/replay"
)

// gone reports whether no process of process group pgid is left running.
func gone(pgid int) bool { return !replay.GroupRunning(pgid) }

var nodePID = regexp.MustCompile(`node under test: .* \(pid (\d+)\)`)

// pidOf returns the node's pid from a text report.
func pidOf(t *testing.T, out string) int {
	t.Helper()
	m := nodePID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no node line in\n%s", out)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// TestReplayNodeLifeCycle is issue 30 item 15 through the binary: replay
// --node starts the node under test, waits until it is ready (its output
// segment, its UDP port, a line it prints), watches it (a node that exits
// during the replay is reported as such, with its exit status and the last
// lines of its stderr, apart from a node that runs and stays silent), and
// stops it at the end (SIGTERM, SIGKILL after --node-grace): no process of
// it is left. Before, there was no --node.
func TestReplayNodeLifeCycle(t *testing.T) {
	dir := t.TempDir()
	dump := writeOwnTypeDump(t, dir)
	node := brakeNodeBinary(t)

	t.Run("go node, default readiness", func(t *testing.T) {
		sut := t.TempDir()
		code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast", "--check", "tolerance", "--abs", "0.01",
			"--node", node+" -shm "+sut)
		if code != exitOK || !strings.Contains(out, "ready after ") || !strings.Contains(out, "(segment planner/brake in "+sut+"); stopped by SIGTERM: exit status 0") ||
			!strings.Contains(out, "ok: 20 outputs") || !strings.Contains(errs, "node: brake-node: handled 20 inputs") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		if pid := pidOf(t, out); !gone(pid) {
			t.Errorf("node %d still running", pid)
		}
		// an environment variable on the command line reaches the node
		code, out, errs = runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast",
			"--node", "EDR_BRAKE_THRESHOLD=17 "+node+" -shm '"+sut+"'")
		if code != exitFail || !strings.Contains(errs, "(threshold 17 m/s)") || !strings.Contains(out, "value command: expected 0.761") {
			t.Fatalf("threshold 17: exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("c node, ready when its UDP port is bound", func(t *testing.T) {
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skipf("needs a C compiler (cc): %v", err)
		}
		bin := filepath.Join(t.TempDir(), "brake_node")
		if out, err := exec.Command(cc, "-std=c99", "-O2", "-ffp-contract=off", "-I../../shm/include", "-o", bin,
			"../../examples/brake-node-c/brake_node.c", "-lm").CombinedOutput(); err != nil {
			t.Fatalf("cc: %v\n%s", err, out)
		}
		sut, port := t.TempDir(), freeUDPPort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		code, out, errs := runBin(t, "replay", dump, "-o", "udp:"+addr, "--map", "vehicle/speed="+addr, "--listen", "shm:"+sut,
			"--expect", "planner/brake", "--rate", "4", "--check", "tolerance", "--abs", "0.01",
			"--node", fmt.Sprintf("%s %s %d", bin, sut, port), "--node-ready", fmt.Sprintf("udp:%d", port))
		if code != exitOK || !strings.Contains(out, fmt.Sprintf("(udp port %d bound); stopped by SIGTERM", port)) || !strings.Contains(out, "ok: 20 outputs") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("a crash is reported with its exit status and stderr", func(t *testing.T) {
		long := writeOwnTypeDumpN(t, dir, 300) // 3 s at rate 1
		sut := t.TempDir()
		crash := fmt.Sprintf("sh -c '%s -shm %s & sleep 0.5; kill -9 $!; echo brake-node died of a bad input >&2; exit 7'", node, sut)
		code, out, errs := runBin(t, "replay", long, "-o", "shm:"+sut, "--expect", "planner/brake", "--node", crash)
		if code != exitFail || !strings.Contains(out, "EXITED on its own after ") || !strings.Contains(out, "inputs: exit status 7") ||
			!strings.Contains(out, "    brake-node died of a bad input") ||
			!regexp.MustCompile(`node under test: .* exited during the replay \(exit status 7\) after \d+ of 300 inputs; the last lines of its stderr: .*brake-node died of a bad input`).MatchString(errs) {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		code, out, _ = runBin(t, "replay", long, "-o", "shm:"+sut, "--expect", "planner/brake", "--node", crash, "--format", "json")
		var res struct {
			OK   bool   `json:"ok"`
			Err  string `json:"error"`
			Node struct {
				Exited bool     `json:"exited"`
				Exit   string   `json:"exit"`
				Tail   []string `json:"stderr_tail"`
			} `json:"node"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitFail || res.OK || !res.Node.Exited || res.Node.Exit != "exit status 7" ||
			!strings.Contains(res.Err, "exited during the replay") || len(res.Node.Tail) == 0 || res.Node.Tail[len(res.Node.Tail)-1] != "brake-node died of a bad input" {
			t.Fatalf("json: exit %d, %v\n%s", code, err, out)
		}
	})

	t.Run("silence is not a crash", func(t *testing.T) {
		sut := t.TempDir()
		code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast", "--timeout", "200ms",
			"--node", `sh -c "echo ready; exec sleep 30"`, "--node-ready", "line:^ready$")
		if code != exitFail || strings.Contains(out, "EXITED") || !strings.Contains(out, `(a line matching "^ready$"); stopped by SIGTERM: signal: terminated`) ||
			!strings.Contains(out, "warning: planner/brake: the node under test ran for the whole replay and published nothing on it (silent, not crashed)") ||
			!strings.Contains(out, "FAIL: 20 mismatches") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("a node ignoring SIGTERM is killed after the grace", func(t *testing.T) {
		sut := t.TempDir()
		code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast", "--timeout", "100ms",
			"--node", `sh -c 'trap "" TERM; echo up; while :; do sleep 0.05; done'`, "--node-ready", "line:up", "--node-grace", "300ms")
		if code != exitFail || !strings.Contains(out, "killed: it did not exit within 300ms of SIGTERM") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		if pid := pidOf(t, out); !gone(pid) {
			t.Errorf("process group %d still has processes", pid)
		}
	})

	t.Run("not ready, or gone before it was", func(t *testing.T) {
		sut := t.TempDir()
		code, out, errs := runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast",
			"--node", "sleep 30", "--node-ready", "line:never", "--node-timeout", "300ms")
		if code != exitFail || !strings.Contains(errs, `node under test: sleep 30 not ready within 300ms (waiting for a line matching "never"; stopped by SIGTERM: signal: terminated); nothing on its stderr`) {
			t.Fatalf("not ready: exit %d\n%s%s", code, out, errs)
		}
		code, out, errs = runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast",
			"--node", `sh -c "echo cannot open the segment directory >&2; exit 2"`)
		if code != exitFail || !strings.Contains(errs, "exited before it was ready (exit status 2), waiting for segment planner/brake in "+sut+"; the last lines of its stderr: cannot open the segment directory") {
			t.Fatalf("gone before ready: exit %d\n%s%s", code, out, errs)
		}
		// a stale segment of an earlier run does not say the node is ready
		code, _, errs = runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast", "--node", node+" -shm "+sut)
		if code != exitFail && code != exitOK {
			t.Fatalf("a first run: exit %d %s", code, errs)
		}
		code, _, errs = runBin(t, "replay", dump, "-o", "shm:"+sut, "--expect", "planner/brake", "--asfast",
			"--node", "sleep 30", "--node-timeout", "300ms")
		if code != exitFail || !strings.Contains(errs, "not ready within 300ms (waiting for segment planner/brake in "+sut) {
			t.Fatalf("a segment left by an earlier run: exit %d\n%s", code, errs)
		}
	})

	t.Run("usage", func(t *testing.T) {
		sut := t.TempDir()
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--node-ready", "line:x"}, "--node-ready is for the node under test"},
			{[]string{"--node", "'unterminated"}, "unterminated ' quote"},
			{[]string{"--node", "x", "--node-ready", "tcp:1"}, "want segment:TOPIC, udp:PORT or line:REGEXP"},
			{[]string{"--node", "x", "--node-timeout", "soon"}, "--node-timeout"},
			{[]string{"--node", "x", "--mode", "output-only"}, "--node is not for --mode output-only"},
			{[]string{"--node", "x", "--listen", "udp:127.0.0.1:1=planner/brake"}, "say when the node under test is ready"},
		} {
			args := append([]string{"replay", dump, "-o", "shm:" + sut, "--expect", "planner/brake", "--asfast"}, c.args...)
			if code, _, errs := runBin(t, args...); code != exitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("%v: exit %d %s", c.args, code, errs)
			}
		}
	})
}
