package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/shm"
)

// The whole-recorder budget (issue 33, item 5): the built edr-lite binary
// records a vehicle's mix of topics over shm while a bare reader of the same
// segments (the floor: budget_floor_test.go) copies the same bytes; both
// are separate processes measured from /proc at the same time, so the
// ratio of their CPU is a same-run figure.

// budgetTopic is one topic of the vehicle mix: count topics named
// name (name/0.. when count > 1), each publishing size-byte messages at hz.
type budgetTopic struct {
	name     string
	count    int
	hz       float64
	size     int
	capacity int // the segment's ring
}

// vehicleMix is issue 33's realistic vehicle: a 30 Hz camera of ~100 KB, a
// 10 Hz point cloud of ~1 MB, a 1 kHz IMU, 4 kHz of CAN-sized messages over
// 40 topics, and a few slow ones; 50 topics, ~5,350 messages and ~13.1 MB a
// second.
var vehicleMix = []budgetTopic{
	{name: "camera/front", count: 1, hz: 30, size: 100_000, capacity: 2 << 20},
	{name: "lidar/points", count: 1, hz: 10, size: 1_000_000, capacity: 8 << 20},
	{name: "imu", count: 1, hz: 1000, size: 48, capacity: 128 << 10},
	{name: "can", count: 40, hz: 100, size: 16, capacity: 16 << 10},
	{name: "vehicle/speed", count: 1, hz: 100, size: 4, capacity: 16 << 10},
	{name: "brake/pedal", count: 1, hz: 100, size: 4, capacity: 16 << 10},
	{name: "steering", count: 1, hz: 100, size: 8, capacity: 16 << 10},
	{name: "gps", count: 1, hz: 10, size: 64, capacity: 16 << 10},
	{name: "diag", count: 3, hz: 1, size: 256, capacity: 16 << 10},
}

// The shipped rules on five topics, none of which fires on this data.
const budgetRules = `
[[rule]]
builtin = "threshold"
params = { topic = "imu", high = "1e30", name = "imu_shock" }
[[rule]]
builtin = "hard_brake"
params = { topic = "vehicle/speed", decel = "1e9" }
[[rule]]
builtin = "threshold"
params = { topic = "brake/pedal", high = "1e30", name = "pedal" }
[[rule]]
builtin = "rate_anomaly"
params = { topic = "camera/front", window = "1.0" }
[[rule]]
builtin = "heartbeat_loss"
params = { topic = "lidar/points", timeout = "5" }
`

// budgetConfig is the recorder's configuration: a 128 MiB cache, 2 s before
// and 1 s after a trigger (a dump is then ~40 MB), each topic's ring sized
// to hold that (84 MiB in all).
const budgetConfig = `
[recorder]
dump_dir = %q
cache_size = "128MiB"
topic_bytes = "64KiB"
pre = "2s"
post = "1s"
guard = "100ms"
[[topic]]
match = "imu"
max_bytes = "1MiB"
[[topic]]
match = "lidar/points"
max_bytes = "64MiB"
[[topic]]
match = "camera/front"
max_bytes = "16MiB"
[rotation]
min_free_disk = 0
max_files = 4
[[source.shm]]
dir = %q
[control]
socket = %q
http = %q
pprof = true
`

// budgetMode is one way the recorder runs the mix.
type budgetMode struct {
	name      string
	rules     bool
	dumpEvery time.Duration // 0: no dumps
}

var budgetModes = []budgetMode{
	{name: "bare"},
	{name: "rules", rules: true},
	{name: "rules+dumps", rules: true, dumpEvery: 20 * time.Second},
}

// budgetResult is what one run measured.
type budgetResult struct {
	rounds              int
	recUser, recSys     []float64 // per round, fraction of one core
	floorCPU            []float64
	ratio               []float64 // recorder CPU / floor CPU, per round
	switches            []float64 // the recorder's context switches per second, per round
	floorSwitches       []float64
	rssKiB, hwmKiB      int
	threads             int
	allocsPerSec        float64
	dumpLatency         []time.Duration // from the end of the window to the answer (guard included)
	dumpErrs            []string
	msgsPerSec, mbPerS  float64
	loadBefore, loadEnd string
}

func (r *budgetResult) recCPU() []float64 {
	s := make([]float64, len(r.recUser))
	for i := range s {
		s[i] = r.recUser[i] + r.recSys[i]
	}
	return s
}

func (r *budgetResult) String() string {
	med := testutil.Median[float64]
	return fmt.Sprintf("recorder %.2f %% of a core (user %.2f, system %.2f), floor %.2f %%, ratio %.2fx (rounds %.2f–%.2f); "+
		"%.0f context switches/s (floor %.0f); RSS %.1f MB (peak %.1f), %d threads, %.0f allocs/s; %.0f msg/s, %.1f MB/s; dump latency %v; load %s → %s",
		100*med(r.recCPU()), 100*med(r.recUser), 100*med(r.recSys), 100*med(r.floorCPU), med(r.ratio),
		minF(r.ratio), maxF(r.ratio), med(r.switches), med(r.floorSwitches), float64(r.rssKiB)/1024, float64(r.hwmKiB)/1024, r.threads, r.allocsPerSec,
		r.msgsPerSec, r.mbPerS, r.dumpLatency, r.loadBefore, r.loadEnd)
}

func minF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxF(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

var (
	edrBinOnce sync.Once
	edrBinPath string
	edrBinErr  error
)

// edrBinary builds cmd/edr-lite once per test binary (removed by TestMain).
func edrBinary(tb testing.TB) string {
	tb.Helper()
	edrBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edr-bench-bin-")
		if err != nil {
			edrBinErr = err
			return
		}
		edrBinPath = filepath.Join(dir, "edr-lite")
		out, err := exec.Command("go", "build", "-o", edrBinPath, "../cmd/edr-lite").CombinedOutput()
		if err != nil {
			edrBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if edrBinErr != nil {
		tb.Fatal(edrBinErr)
	}
	return edrBinPath
}

func removeEdrBinary() {
	if edrBinPath != "" {
		os.RemoveAll(filepath.Dir(edrBinPath))
	}
}

// startVehicle creates the mix's segments in dir and publishes at the
// mix's rates, each topic from its own goroutine, until the returned stop.
// It returns the segment paths.
func startVehicle(tb testing.TB, dir string) (paths []string, stop func() (msgs, bytes uint64)) {
	tb.Helper()
	type pub struct {
		p    *shm.Producer
		t    budgetTopic
		msgs uint64
		b    uint64
	}
	var pubs []*pub
	for _, t := range vehicleMix {
		for i := range t.count {
			name := t.name
			if t.count > 1 {
				name = fmt.Sprintf("%s/%d", t.name, i)
			}
			p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: name, Capacity: t.capacity, HeartbeatPeriod: time.Second})
			if err != nil {
				tb.Fatal(err)
			}
			pubs = append(pubs, &pub{p: p, t: t})
			paths = append(paths, p.Path())
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for k, pb := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, pb.t.size)
			for i := range payload {
				payload[i] = byte(i*7 + k)
			}
			// values no rule fires on: small positive floats
			if len(payload) >= 4 {
				copy(payload, []byte{0, 0, 0x80, 0x3f}) // 1.0f
			}
			period := time.Duration(float64(time.Second) / pb.t.hz)
			tick := time.NewTicker(period)
			defer tick.Stop()
			hb := time.NewTicker(500 * time.Millisecond)
			defer hb.Stop()
			for {
				select {
				case <-done:
					return
				case <-hb.C:
					pb.p.Heartbeat()
				case <-tick.C:
					if err := pb.p.Publish(time.Now().UnixNano(), payload); err == nil {
						pb.msgs++
						pb.b += uint64(len(payload))
					}
				}
			}
		}()
	}
	return paths, func() (msgs, bytes uint64) {
		close(done)
		wg.Wait()
		for _, pb := range pubs {
			msgs += pb.msgs
			bytes += pb.b
			pb.p.Close()
		}
		return msgs, bytes
	}
}

// procCPU is a process's user and system time from /proc/PID/stat.
func procCPU(tb testing.TB, pid int) (user, sys time.Duration) {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("needs /proc: %v", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ = 100
	return time.Duration(u) * tick, time.Duration(k) * tick
}

// procStatusKiB reads a field of /proc/PID/status ("VmRSS", "Threads").
func procStatusField(tb testing.TB, pid int, field string) int {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("needs /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// procSwitches sums the context switches (voluntary and not) of every
// thread of a process: its wake-ups, give or take preemptions.
func procSwitches(pid int) uint64 {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var n uint64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			} else if v, ok := strings.CutPrefix(l, "nonvoluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			}
		}
	}
	return n
}

// mallocs reads the recorder's runtime.MemStats.Mallocs from its
// /debug/pprof/allocs?debug=1 page.
func mallocs(tb testing.TB, addr string) uint64 {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/allocs?debug=1")
	if err != nil {
		tb.Fatalf("allocs: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# Mallocs = "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			io.Copy(io.Discard, resp.Body)
			return n
		}
	}
	tb.Fatalf("allocs: no Mallocs line")
	return 0
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// budgetDir is where the segments go: /dev/shm as on a vehicle, else a
// temporary directory.
func budgetDir(tb testing.TB) string {
	tb.Helper()
	if d, err := os.MkdirTemp("/dev/shm", "edr-budget-"); err == nil {
		tb.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return tb.TempDir()
}

// runBudget runs the mix for rounds of round each, the recorder in mode m
// beside the floor polling every floorPoll.
func runBudget(tb testing.TB, m budgetMode, rounds int, round, floorPoll time.Duration) *budgetResult {
	tb.Helper()
	bin := edrBinary(tb)
	dir := budgetDir(tb)
	shmDir, dumpDir, sock := filepath.Join(dir, "shm"), filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock")
	os.MkdirAll(shmDir, 0o700)
	addr := freeAddr(tb)
	cfg := fmt.Sprintf(budgetConfig, dumpDir, shmDir, sock, addr)
	if ri := os.Getenv("EDR_BUDGET_READ_INTERVAL"); ri != "" { // source.shm.read_interval (the default when unset)
		cfg = strings.Replace(cfg, "[[source.shm]]\n", fmt.Sprintf("[[source.shm]]\nread_interval = %q\n", ri), 1)
	}
	if m.rules {
		cfg += budgetRules
	}
	cfgPath := filepath.Join(dir, "edr.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	res := &budgetResult{rounds: rounds, loadBefore: loadavg()}

	paths, stopVehicle := startVehicle(tb, shmDir)
	vehicleStopped := false
	defer func() {
		if !vehicleStopped {
			stopVehicle()
		}
	}()

	rec := exec.Command(bin, "run", "--config", cfgPath)
	var logs strings.Builder
	rec.Stderr = &logs
	if err := rec.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		rec.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { rec.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			rec.Process.Kill()
			<-done
		}
	}()
	floor := startFloor(tb, paths, floorPoll)
	defer floor.stop()

	// Ready: the control socket answers and every topic is recorded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := control.Do(ctx, sock, &control.Request{Op: "status"})
		cancel()
		if err == nil && strings.Count(string(resp.Status), `"held_messages"`) >= len(paths) {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("recorder not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // rings past their first fill, rules warm

	var dumpWG sync.WaitGroup
	dumpStop := make(chan struct{})
	var dumpMu sync.Mutex
	if m.dumpEvery > 0 {
		dumpWG.Add(1)
		go func() {
			defer dumpWG.Done()
			t := time.NewTimer(m.dumpEvery / 4)
			defer t.Stop()
			for {
				select {
				case <-dumpStop:
					return
				case <-t.C:
				}
				t.Reset(m.dumpEvery)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, err := control.Do(ctx, sock, &control.Request{Op: "trigger", Reason: "budget"})
				answered := time.Now()
				cancel()
				dumpMu.Lock()
				switch {
				case err != nil:
					res.dumpErrs = append(res.dumpErrs, err.Error())
				case resp.Dump == nil || resp.Dump.Status != "written":
					res.dumpErrs = append(res.dumpErrs, fmt.Sprintf("dump %+v", resp.Dump))
				default:
					res.dumpLatency = append(res.dumpLatency, answered.Sub(time.Unix(0, resp.Dump.EndNs)).Round(time.Millisecond))
				}
				dumpMu.Unlock()
			}
		}()
	}

	pid, fpid := rec.Process.Pid, floor.cmd.Process.Pid
	profileRecorder(tb, addr, pid, round, time.Duration(rounds)*round)
	m0, t0 := mallocs(tb, addr), time.Now()
	for range rounds {
		u0, s0 := procCPU(tb, pid)
		fu0, fs0 := procCPU(tb, fpid)
		w0, fw0 := procSwitches(pid), procSwitches(fpid)
		r0 := time.Now()
		time.Sleep(round)
		u1, s1 := procCPU(tb, pid)
		fu1, fs1 := procCPU(tb, fpid)
		wall := time.Since(r0).Seconds()
		ru, rs := (u1-u0).Seconds()/wall, (s1-s0).Seconds()/wall
		fc := ((fu1 - fu0) + (fs1 - fs0)).Seconds() / wall
		res.recUser, res.recSys, res.floorCPU = append(res.recUser, ru), append(res.recSys, rs), append(res.floorCPU, fc)
		res.ratio = append(res.ratio, (ru+rs)/max(fc, 0.0005))
		res.switches = append(res.switches, float64(procSwitches(pid)-w0)/wall)
		res.floorSwitches = append(res.floorSwitches, float64(procSwitches(fpid)-fw0)/wall)
	}
	m1 := mallocs(tb, addr)
	defer http.DefaultClient.CloseIdleConnections()
	res.allocsPerSec = float64(m1-m0) / time.Since(t0).Seconds()
	res.rssKiB, res.hwmKiB = procStatusField(tb, pid, "VmRSS"), procStatusField(tb, pid, "VmHWM")
	res.threads = procStatusField(tb, pid, "Threads")
	close(dumpStop)
	dumpWG.Wait()
	floorBytes := floor.stop()
	msgs, bytes := stopVehicle()
	vehicleStopped = true
	if floorBytes == 0 {
		tb.Errorf("the floor copied nothing: %s", floor.out.String())
	}
	total := time.Since(t0).Seconds() + 3 // rounds and the warm-up, roughly
	res.msgsPerSec, res.mbPerS = float64(msgs)/total, float64(bytes)/total/1e6
	res.loadEnd = loadavg()
	if strings.Contains(logs.String(), "level=ERROR") {
		tb.Logf("recorder logged errors:\n%s", logs.String())
	}
	return res
}

// profileRecorder, with EDR_BUDGET_PPROF=FILE, saves a CPU profile of the
// recorder over all the rounds to FILE (Go's 100 Hz: a few samples a
// second at this load); with EDR_BUDGET_PERF=FILE, perf record's call
// graphs at 999 Hz over all the rounds (perf report -i FILE); with
// EDR_BUDGET_STRACE=FILE it counts the recorder's system calls over the
// first round (strace -c -f) into FILE (strace slows it: that round's CPU
// is not the recorder's own).
func profileRecorder(tb testing.TB, addr string, pid int, round, all time.Duration) {
	if f := os.Getenv("EDR_BUDGET_PERF"); f != "" {
		cmd := exec.Command("perf", "record", "-q", "-F", "999", "-g", "-p", strconv.Itoa(pid), "-o", f, "--", "sleep", strconv.Itoa(int(all.Seconds())))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			tb.Logf("perf: %v", err)
		} else {
			go cmd.Wait()
		}
	}
	if f := os.Getenv("EDR_BUDGET_PPROF"); f != "" {
		go func() {
			resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(all.Seconds())))
			if err != nil {
				tb.Logf("profile: %v", err)
				return
			}
			defer resp.Body.Close()
			out, err := os.Create(f)
			if err != nil {
				tb.Logf("profile: %v", err)
				return
			}
			io.Copy(out, resp.Body)
			out.Close()
		}()
	}
	if f := os.Getenv("EDR_BUDGET_STRACE"); f != "" {
		cmd := exec.Command("strace", "-c", "-f", "-o", f, "-p", strconv.Itoa(pid))
		if err := cmd.Start(); err != nil {
			tb.Logf("strace: %v", err)
			return
		}
		go func() {
			time.Sleep(round)
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}()
	}
}

// budgetDuration is how long BenchmarkRecorderBudget measures
// (EDR_BUDGET_TIME, 60 s by default), in rounds of 10 s.
func budgetDuration() time.Duration {
	if s := os.Getenv("EDR_BUDGET_TIME"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d >= time.Second {
			return d
		}
	}
	return 60 * time.Second
}

// TestRecorderBudgetGate is the whole-recorder budget's short form, run by
// CI's bench step: 10 s of the mix with the five rules and one dump, the
// figure logged; it fails when the recorder takes more than
// budgetRegression times the floor's CPU (a regression bound: the goal is
// 2x, logged as GOAL NOT MET when missed) or the dump fails.
func TestRecorderBudgetGate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the recorder for 10 s: not in -short mode")
	}
	if testutil.RaceEnabled {
		t.Skip("CPU figures: not under the race detector")
	}
	testutil.SkipUnderEmulation(t, "CPU figures")
	m := budgetMode{name: "rules+dumps", rules: true, dumpEvery: 20 * time.Second}
	r := runBudget(t, m, 2, 5*time.Second, floorPoll())
	t.Logf("whole-recorder budget, 10 s, rules and a dump: %v", r)
	if len(r.dumpErrs) > 0 || len(r.dumpLatency) == 0 {
		t.Errorf("the dump was not written: %v", r.dumpErrs)
	}
	ratio := testutil.Median(r.ratio)
	if ratio > budgetGoal {
		t.Logf("GOAL NOT MET: the recorder takes %.2fx the floor's CPU, goal <= %.1fx", ratio, budgetGoal)
	}
	if ratio > budgetRegression {
		t.Errorf("the recorder takes %.2fx the floor's CPU, more than the regression bound %.1fx", ratio, budgetRegression)
	}
}

// The budget's goal and the gate's regression bound (recorder CPU / floor
// CPU).
const (
	budgetGoal       = 2.0
	budgetRegression = 4.0
)

// BenchmarkRecorderBudget is the whole-recorder budget: the built binary
// records the vehicle mix for EDR_BUDGET_TIME (60 s) per mode — bare (no
// rules, no dumps), the five rules, the rules and a dump every 20 s —
// beside the floor, reporting the recorder's CPU (% of one core, user and
// system), its ratio to the floor's CPU (median of 10 s rounds), RSS,
// allocations per second and the dumps' latency. docs/performance.md.
//
//	go test -run '^$' -bench RecorderBudget -benchtime 1x ./bench/
func BenchmarkRecorderBudget(b *testing.B) {
	if testutil.RaceEnabled {
		b.Skip("CPU figures: not under the race detector")
	}
	d := budgetDuration()
	round := min(10*time.Second, d)
	rounds := max(int(d/round), 1)
	for _, m := range budgetModes {
		b.Run("mode="+m.name, func(b *testing.B) {
			var r *budgetResult
			for b.Loop() {
				r = runBudget(b, m, rounds, round, floorPoll())
			}
			med := testutil.Median[float64]
			b.ReportMetric(100*med(r.recCPU()), "rec-%core")
			b.ReportMetric(100*med(r.recUser), "user-%core")
			b.ReportMetric(100*med(r.recSys), "sys-%core")
			b.ReportMetric(100*med(r.floorCPU), "floor-%core")
			b.ReportMetric(med(r.ratio), "ratio/floor")
			b.ReportMetric(med(r.switches), "switches/s")
			b.ReportMetric(float64(r.rssKiB)/1024, "RSS-MB")
			b.ReportMetric(r.allocsPerSec, "allocs/s")
			if len(r.dumpLatency) > 0 {
				b.ReportMetric(float64(testutil.Median(r.dumpLatency).Milliseconds()), "dump-ms")
			}
			b.Log(r)
			if len(r.dumpErrs) > 0 {
				b.Errorf("dumps failed: %v", r.dumpErrs)
			}
		})
	}
}
