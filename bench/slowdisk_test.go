package bench

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSlowDisk checks the script the ECU-class figures of docs/evidence.md
// are measured with (bench/slowdisk): the command runs with TMPDIR on the
// throttled disk, a write there takes at least the time the rate allows
// (a lower bound: a loaded machine only makes it slower), the command's
// exit status is the script's, and nothing is left behind (loop device,
// throttle, image), also when the script is stopped (TERM) while the
// command holds a file on the disk, and when the loop device is still
// open as the script detaches it. Where the script cannot run (not root, no blkio
// controller) it checks that it says why and runs nothing.
func TestSlowDisk(t *testing.T) {
	script, err := filepath.Abs("slowdisk")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{nil, {"200"}, {"0", "true"}, {"fast", "true"}, {"--help"}} {
			want := 2
			if len(args) == 1 && args[0] == "--help" {
				want = 0
			}
			out, err := exec.Command(script, args...).CombinedOutput()
			if code := exitCode(err); code != want || !strings.Contains(string(out), "RATE MB/s") {
				t.Errorf("slowdisk %q: exit %d, want %d and the usage; output:\n%s", args, code, want, out)
			}
		}
	})
	images := t.TempDir()
	cmd := exec.Command(script, "50", "sh", "-c",
		`test -d "$TMPDIR" && dd if=/dev/zero of="$TMPDIR/x" bs=1M count=100 conv=fsync 2>/dev/null && findmnt -n -o SOURCE --target "$TMPDIR" && exit 7`)
	cmd.Env = append(os.Environ(), "SLOWDISK_IMAGE_DIR="+images)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(t0)
	if code := exitCode(err); code == 2 {
		if !strings.Contains(string(out), "slowdisk: cannot run: ") {
			t.Fatalf("exit 2 without saying why:\n%s", out)
		}
		t.Skipf("slowdisk cannot run here: %s", strings.TrimSpace(string(out)))
	} else if code != 7 {
		t.Fatalf("exit %d, want the command's 7; output:\n%s", code, out)
	}
	if !strings.Contains(string(out), "/dev/loop") {
		t.Errorf("TMPDIR is not on the loop device:\n%s", out)
	}
	// 100 MiB at 50 MB/s: 2.1 s; the throttle lets a first slice through.
	if took < 1500*time.Millisecond {
		t.Errorf("100 MiB written and fsynced in %v: not held to 50 MB/s", took)
	}
	noneLeft(t, images)

	// Stopped (TERM) while the command holds a file open on the disk: the
	// command and what it started are stopped, the disk unmounted.
	cmd = exec.Command(script, "50", "sh", "-c", `exec 3>"$TMPDIR/held"; echo ready; sleep 60`)
	cmd.Env = append(os.Environ(), "SLOWDISK_IMAGE_DIR="+images)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the command did not start: %q", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != 128+int(syscall.SIGTERM) {
			t.Errorf("stopped: exit %d, want %d", code, 128+int(syscall.SIGTERM))
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("stopped with TERM, the script still runs after 30 s")
	}
	noneLeft(t, images)

	// The loop device still open when the script detaches it (as udev
	// does when it probes a device): the kernel detaches it when it is
	// last closed, and the script waits for that before it returns.
	cmd = exec.Command(script, "50", "sh", "-c",
		`d=$(findmnt -n -o SOURCE --target "$TMPDIR") && setsid sh -c "exec 3<$d; sleep 1" >/dev/null 2>&1 & sleep 0.2`)
	cmd.Env = append(os.Environ(), "SLOWDISK_IMAGE_DIR="+images)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v; output:\n%s", err, out)
	}
	noneLeft(t, images)
}

// noneLeft checks that slowdisk left no image in images, no loop device
// on one, and no throttle on a loop device.
func noneLeft(t *testing.T, images string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(images, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	loops, err := exec.Command("losetup", "-a").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(loops), images) {
		t.Errorf("loop device left: %s", loops)
	}
	th, err := os.ReadFile("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(th)), "\n") {
		if strings.HasPrefix(line, "7:") { // loop devices' major
			t.Errorf("throttle left: %q", line)
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
