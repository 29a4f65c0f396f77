package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// brakeLayoutText is examples/brake-node/brake.layout's struct.
const brakeLayoutText = "f32le speed (m/s); f32le obstacle (m); f32le command; u8 brake; pad 3"

// writeLoopDump writes n speed inputs and n planner/brake outputs (16
// bytes, typed ownType with the brake layout when ownType is not empty),
// each output 1 µs after its input and stamped with its producer time.
func writeLoopDump(t *testing.T, dir, ownType string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "loop.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if ownType != "" {
		w.SetTopicType("planner/brake", "", ingest.Packed(ownType, brakeLayoutText), t0)
	}
	for i := range n {
		ts := t0 + int64(i)*10e6
		if err := w.Add("vehicle/speed", "", nil, ts, ts, []byte{0, 0, 0xa0, 0x41}); err != nil {
			t.Fatal(err)
		}
		if err := w.Add("planner/brake", "", nil, ts, ts+1000, make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplayExpectRefusedEveryMode is issue 30 item 13 through the binary:
// an --expect glob that matches no topic of the dump (a typo) is refused
// in every mode with the same error as in full mode, before anything is
// sent (no UDP port map printed: the recorded output is not sent to the
// node as an input). Before, input-only exited 0 with an empty table and
// replayed planner/brake to the node. --format json carries the reason.
func TestReplayExpectRefusedEveryMode(t *testing.T) {
	dir := t.TempDir()
	dump := writeLoopDump(t, dir, "", 20)
	const want = "expect planner/brak matches no topic of the dumps (they hold planner/brake, vehicle/speed)"
	for _, mode := range []string{"full", "input-only", "output-only"} {
		for _, out := range []string{"shm:" + filepath.Join(dir, "sut"), "udp:127.0.0.1:39001"} {
			args := []string{"replay", dump, "-o", out, "--expect", "planner/brak", "--mode", mode, "--asfast"}
			if strings.HasPrefix(out, "udp:") && mode != "output-only" {
				args = append(args, "--listen", "udp:127.0.0.1:39100=planner/brake")
			}
			code, stdout, errs := runBin(t, args...)
			if code != exitUsage || !strings.Contains(errs, want) || strings.Contains(errs, "-> udp") || stdout != "" {
				t.Errorf("%s to %s: exit %d\nstdout %s\nstderr %s", mode, out, code, stdout, errs)
			}
		}
	}
	// one glob of two matching nothing is refused too
	code, _, errs := runBin(t, "replay", dump, "-o", "shm:"+dir, "--expect", "planner/brake,planner/typo", "--asfast")
	if code != exitUsage || !strings.Contains(errs, "expect planner/typo matches no topic") {
		t.Errorf("a second glob matching nothing: exit %d %s", code, errs)
	}
	// input-only says how to name an output the recording does not hold,
	// and --collect refuses a recorded topic and any mode but input-only
	code, _, errs = runBin(t, "replay", dump, "-o", "shm:"+dir, "--expect", "planner/brak", "--mode", "input-only")
	if code != exitUsage || !strings.Contains(errs, "an output the recording does not hold is named with collect (--collect)") {
		t.Errorf("input-only hint: exit %d %s", code, errs)
	}
	code, _, errs = runBin(t, "replay", dump, "-o", "shm:"+dir, "--collect", "planner/*", "--mode", "input-only")
	if code != exitUsage || !strings.Contains(errs, "collect planner/* matches planner/brake, which the dumps hold") {
		t.Errorf("--collect of a recorded topic: exit %d %s", code, errs)
	}
	code, _, errs = runBin(t, "replay", dump, "-o", "shm:"+dir, "--collect", "planner/new")
	if code != exitUsage || !strings.Contains(errs, "collect names outputs the recording does not hold, for input-only") {
		t.Errorf("--collect in full mode: exit %d %s", code, errs)
	}

	// --format json: the reason of a refusal and of a failed run
	code, stdout, _ := runBin(t, "replay", dump, "-o", "shm:"+dir, "--expect", "planner/brak", "--mode", "input-only", "--format", "json")
	var res struct {
		OK    bool   `json:"ok"`
		Mode  string `json:"mode"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitUsage || res.OK || res.Mode != "input-only" || !strings.Contains(res.Error, want) {
		t.Errorf("json refusal: exit %d, %v\n%s", code, err, stdout)
	}
	code, stdout, _ = runBin(t, "replay", dump, "-o", "shm:"+filepath.Join(dir, "quiet"), "--expect", "planner/brake", "--lockstep", "ack:planner/brake",
		"--timeout", "200ms", "--asfast", "--format", "json")
	res.Error = ""
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitFail || res.OK ||
		!strings.Contains(res.Error, "the system under test did not answer in time: step 1") {
		t.Errorf("json failure of the run: exit %d, %v\n%s", code, err, stdout)
	}
	code, stdout, _ = runBin(t, "replay", dump, "-o", "shm:"+filepath.Join(dir, "silent"), "--expect", "planner/brake", "--timeout", "100ms", "--asfast", "--format", "json")
	res.Error = ""
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitFail || res.OK || res.Error != "20 mismatches between the outputs and the recording" {
		t.Errorf("json mismatches: exit %d, %v\n%s", code, err, stdout)
	}
}
