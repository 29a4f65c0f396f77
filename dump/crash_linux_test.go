package dump

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/pack"

	"golang.org/x/sys/unix"
)

// stallWriter announces itself after n messages and then blocks forever, so
// a parent process can kill the recorder in the middle of a dump.
type stallWriter struct {
	Writer
	n int
}

func (s *stallWriter) WriteMessage(t *ingest.TopicInfo, g, c int64, d []byte) error {
	if s.n == 0 {
		fmt.Println("MIDDUMP")
		select {}
	}
	s.n--
	return s.Writer.WriteMessage(t, g, c, d)
}

// TestCrashChild is the child of TestKilledMidDump; it does nothing unless
// EDR_CRASH_DIR is set.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("EDR_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestKilledMidDump")
	}
	dumps := 0
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{Dir: dir, Policy: PolicySeparate, FrameSize: 4096,
		NewWriter: func(path string, o WriterOptions) (Writer, error) {
			w, err := NewPackMmapWriter(path, o)
			if err != nil {
				return nil, err
			}
			dumps++
			if dumps == 3 {
				return &stallWriter{Writer: w, n: 500}, nil
			}
			return w, nil
		}}})
	ids := discover(t, r, "a", "b")
	for i := range 3 {
		base := t0 + int64(i)*10_000*ms
		feed(r, vc, ids, base, base+1000*ms, ms)
		id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("crash", i)})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(base + 1100*ms)
		if i < 2 {
			if res := wait(t, r, id); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
	}
	select {} // killed by the parent
}

// TestKilledMidDump: a recorder killed with SIGKILL in the middle of a dump
// leaves only a .tmp for it; every finished dump verifies.
func TestKilledMidDump(t *testing.T) {
	testutil.SkipUnderEmulation(t, testutil.ReexecUnderEmulation)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "EDR_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	seen := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "MIDDUMP") {
			seen = true
			break
		}
	}
	if !seen {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("child never reached the middle of its third dump")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	done, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(done) != 2 || len(tmps) != 1 || !strings.Contains(tmps[0], "_crash2_3.pack.tmp") {
		t.Fatalf("after SIGKILL: finished %v, tmp %v", done, tmps)
	}
	for _, f := range done {
		rep, err := pack.Verify(f)
		if err != nil || !rep.OK() {
			t.Fatalf("finished dump %s does not verify: %v %+v", f, err, rep)
		}
	}
	// The next start reports the leftover.
	r, err := newRig(t, rigConfig{Rec: engine.Config{CacheSize: 1 << 20}, Dump: Config{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if left := r.Status().LeftoverTmp; len(left) != 1 {
		t.Fatalf("leftovers reported: %v", left)
	}
}

// TestDiskFullTmpfs fills a small tmpfs mid-dump: the .tmp is removed, the
// error reported, recording goes on, and a dump that fits succeeds.
func TestDiskFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("needs CAP_SYS_ADMIN to mount a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, 0)
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(2 * time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0)), TopicBytes: 1 << 20}, Dump: Config{Dir: dir, FrameSize: 16 << 10}})
	ids := discover(t, r, "big")
	payload := make([]byte, 4096)
	for ns := t0; ns <= t0+1000*ms; ns += 5 * ms { // 201 x 4 KiB = 800 KiB > 512 KiB
		vc.Set(ns)
		r.Ingest(ids["big"], ns-1, payload)
	}
	id, _ := r.Trigger(TriggerParams{Reason: "full"})
	vc.Set(t0 + 1100*ms)
	res := wait(t, r, id)
	if res.Err == nil || !errors.Is(res.Err, unix.ENOSPC) {
		t.Fatalf("dump into a full tmpfs: %+v", res)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if !r.Ingest(ids["big"], 0, payload) {
		t.Fatal("recording stopped after a failed dump")
	}
	id, _ = r.Trigger(TriggerParams{Reason: "fits", Pre: new(100 * time.Millisecond)})
	vc.Set(t0 + 1200*ms)
	if res := wait(t, r, id); res.Err != nil || res.Messages == 0 {
		t.Fatalf("small dump after the full one: %+v", res)
	}
}
