package shm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

const (
	producerEnv    = "EDR_SHM_TEST_PRODUCER"
	noHeartbeatEnv = "EDR_SHM_TEST_NO_HEARTBEAT" // the producer subprocess never heartbeats
)

// TestMain runs the producer subprocess when asked to (see
// startProducerProcess), else the tests, failing the package when a test
// leaves a goroutine behind (a consumer's followers, watcher or reader).
func TestMain(m *testing.M) {
	if dir := os.Getenv(producerEnv); dir != "" {
		os.Exit(runTestProducer(dir))
	}
	testutil.VerifyNoLeaks(m)
}

// runTestProducer is the body of the producer subprocess: it publishes 100
// messages, says "ready" and waits to be killed.
func runTestProducer(dir string) int {
	hb := time.Second
	if os.Getenv(noHeartbeatEnv) != "" {
		hb = 0
	}
	p, err := NewProducer(dir, ProducerOptions{Name: "victim", HeartbeatPeriod: hb})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for i := range 100 {
		p.Publish(int64(i), []byte("alive"))
	}
	fmt.Println("ready")
	for {
		if hb > 0 {
			p.Heartbeat()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startProducerProcess re-executes the test binary as a producer; env adds
// to its environment.
func startProducerProcess(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	testutil.SkipUnderEmulation(t, testutil.ReexecUnderEmulation)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), producerEnv+"="+dir), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("producer process: %q, %v", line, err)
	}
	return cmd
}

// TestSIGKILLedProducerGoesOffline kills a producer process that never
// heartbeats, so only the consumer's check of the process can take its
// topic offline: it must, with every message it published recorded,
// whether the consumer learns it through inotify or by polling. The
// latency is logged, not gated (a loaded machine stretches it).
func TestSIGKILLedProducerGoesOffline(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ConsumerOptions
	}{
		{"inotify+futex", ConsumerOptions{}},
		{"polling", ConsumerOptions{NoInotify: true, Wait: WaitPoll, ScanInterval: 50 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sink := newRecSink()
			startConsumer(t, dir, sink, tc.opts)
			cmd := startProducerProcess(t, dir, noHeartbeatEnv+"=1")
			id := waitTopic(t, sink, "victim", "")
			sink.waitFor(t, "100 messages", func() bool { return len(sink.messages(id)) == 100 })
			killed := time.Now()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
			sink.mu.Lock()
			took := sink.offline[id].Sub(killed)
			sink.mu.Unlock()
			t.Logf("offline %v after SIGKILL", took)
		})
	}
}

// TestZombieProducerGoesOffline: a producer that exited but was not reaped
// by its parent (a zombie) still has its pid, and kill(pid, 0) succeeds on
// it. Without heartbeats, only the consumer's check of the process itself
// (a pidfd, or the zombie state in /proc) takes the topic offline.
func TestZombieProducerGoesOffline(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	cmd := startProducerProcess(t, dir, noHeartbeatEnv+"=1")
	id := waitTopic(t, sink, "victim", "")
	sink.waitFor(t, "100 messages", func() bool { return len(sink.messages(id)) == 100 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped until the test's cleanup: the process is a zombie now.
	sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
	if st, ok := readProcStat(uint32(cmd.Process.Pid)); !ok || st.state != 'Z' {
		t.Fatalf("producer process state %q (%v), want a zombie while the test holds it", st.state, ok)
	}
}

// TestReusedPIDIsNotTheProducer: a segment whose producer_pid now belongs
// to a process that started after the segment did (the producer died and
// its pid was given to someone else) is a dead producer's segment, read as
// a leftover (counted, not ingested), whereas the same pid with a later
// start_ns is a live one.
func TestReusedPIDIsNotTheProducer(t *testing.T) {
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Skipf("needs sleep(1): %v", err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	pid := uint32(other.Process.Pid)
	now := time.Now().UnixNano()
	for _, tc := range []struct {
		name    string
		startNs int64
		dead    bool
	}{
		{"segment older than the process", now - int64(10*time.Second), true}, // within this boot: an older start is not judged
		{"segment younger than the process", now + int64(time.Second/2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownerGone(pid, tc.startNs); got != tc.dead {
				t.Fatalf("ownerGone(pid %d, start %d) = %v, want %v", pid, tc.startNs, got, tc.dead)
			}
			// The consumer: a live segment stamped with that pid and start.
			dir := t.TempDir()
			sink := newRecSink()
			p := newProducer(t, dir, ProducerOptions{Name: "reused", Clock: clock.Func(func() int64 { return tc.startNs })})
			binary.LittleEndian.PutUint32(p.mem[offPID:], pid)
			p.Publish(1, []byte("x"))
			time.Sleep(leftoverMargin + 20*time.Millisecond) // in place before the consumer starts
			left := make(chan SegmentStats, 1)
			startConsumer(t, dir, sink, ConsumerOptions{CheckInterval: 20 * time.Millisecond,
				OnLeftover: func(st SegmentStats) { left <- st }})
			if tc.dead {
				select {
				case st := <-left:
					if st.Messages != 1 || st.Topic.Name != "reused" {
						t.Fatalf("leftover %+v, want 1 message of reused", st)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the dead producer's segment was not read as a leftover")
				}
				if _, ok := sink.topic("reused", ""); ok {
					t.Fatal("a leftover segment was discovered as a live topic")
				}
				return
			}
			id := waitTopic(t, sink, "reused", "")
			sink.waitFor(t, "the message", func() bool { return len(sink.messages(id)) == 1 })
			time.Sleep(300 * time.Millisecond) // about 15 liveness checks
			if !sink.isOnline(id) {
				t.Fatal("the segment of a live producer went offline")
			}
		})
	}
	// A virtual clock's start time (long before boot) is not judged.
	if ownerGone(pid, 1e9) {
		t.Fatal("a start_ns before boot made a live process dead")
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		in    string
		ok    bool
		state byte
		start uint64
	}{
		{"42 (a b) c)) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1000 100", true, 'S', 12345},
		{"7 (zz) Z 1 7 7 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", true, 'Z', 99},
		{"7 (zz) Z 1 7", false, 0, 0},
		{"no parenthesis", false, 0, 0},
		{"7 (x) SS 1 7 7 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", false, 0, 0},
	} {
		st, ok := parseProcStat([]byte(tc.in))
		if ok != tc.ok || st.state != tc.state || st.startTicks != tc.start {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %c %d %v", tc.in, st, ok, tc.state, tc.start, tc.ok)
		}
	}
}
