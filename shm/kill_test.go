package shm

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

const producerEnv = "EDR_SHM_TEST_PRODUCER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(producerEnv); dir != "" {
		os.Exit(runTestProducer(dir))
	}
	os.Exit(m.Run())
}

// runTestProducer is the body of the producer subprocess: it publishes 100
// messages, says "ready" and waits to be killed.
func runTestProducer(dir string) int {
	p, err := NewProducer(dir, ProducerOptions{Name: "victim", HeartbeatPeriod: time.Second})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for i := range 100 {
		p.Publish(int64(i), []byte("alive"))
	}
	fmt.Println("ready")
	for {
		p.Heartbeat()
		time.Sleep(100 * time.Millisecond)
	}
}

// startProducerProcess re-executes the test binary as a producer.
func startProducerProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), producerEnv+"="+dir)
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

// TestSIGKILLedProducerGoesOffline kills a producer process: its topic must
// be offline within one heartbeat period, with every message it published
// recorded, whether the consumer learns it through inotify or by polling.
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
			cmd := startProducerProcess(t, dir)
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
			if took > time.Second {
				t.Errorf("offline %v after SIGKILL, want within the heartbeat period (1s)", took)
			}
			t.Logf("offline %v after SIGKILL", took)
		})
	}
}
