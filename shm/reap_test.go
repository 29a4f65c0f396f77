package shm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

var (
	tySpeedF32 = ingest.Packed("vehicle.Speed", "f32le speed (m/s)")
	tySpeedF64 = ingest.Packed("vehicle.Speed", "f64le speed (m/s)")
)

// TestReapSparesReplacement: a producer closes its segment and a new one
// for the topic (here with another type, as a replay does at a change of
// type) is renamed into place just as the consumer goes to remove the
// closed one. The consumer removes only the file it followed: the new
// segment stays, and every message of both producers is recorded. (It
// removed the new file before, losing all of its messages: the flaky
// cmd/edr-lite TestTypedReplayReRecord got 25 of 50.)
func TestReapSparesReplacement(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	var p2 *Producer
	testHookBeforeReap = func(path string) {
		if p2 == nil {
			p2 = newProducer(t, dir, ProducerOptions{Name: "speed", Type: tySpeedF64})
			for i := 5; i < 10; i++ {
				p2.Publish(int64(i), []byte{byte(i)})
			}
		}
	}
	// reset after the consumer stopped (cleanups run last first; the
	// consumer's is registered by startConsumer, after this one)
	t.Cleanup(func() { testHookBeforeReap = nil })
	startConsumer(t, dir, sink, ConsumerOptions{})
	p1 := newProducer(t, dir, ProducerOptions{Name: "speed", Type: tySpeedF32})
	id := waitTopic(t, sink, "speed", "")
	for i := range 5 {
		p1.Publish(int64(i), []byte{byte(i)})
	}
	p1.Close()
	sink.waitFor(t, "10 messages", func() bool { return len(sink.messages(id)) == 10 })
	for i, m := range sink.messages(id) {
		if m.payload[0] != byte(i) {
			t.Fatalf("message %d is %d", i, m.payload[0])
		}
	}
	if fi, err := lstat(p2.Path()); err != nil || fi.id != p2.id {
		t.Errorf("the new segment is gone: %v", err)
	}
	p2.Close()
	// The reap renames the file aside, then removes it: the path is gone
	// a moment before the aside name is, so wait for both (a file left
	// aside for good fails the wait).
	sink.waitFor(t, "the new segment removed once closed, nothing left aside", func() bool {
		_, err := os.Stat(p2.Path())
		left, _ := filepath.Glob(filepath.Join(dir, ".*.reap"))
		return errors.Is(err, os.ErrNotExist) && len(left) == 0
	})
}

// TestRemoveIfID: the file at the path is removed only when it is the one
// named; another file there is left in place.
func TestRemoveIfID(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o600)
	os.WriteFile(b, []byte("b"), 0o600)
	ia, _ := lstat(a)
	if err := removeIfID(b, ia.id); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b); err != nil || string(got) != "b" {
		t.Fatalf("another file removed or changed: %q %v", got, err)
	}
	if err := removeIfID(a, ia.id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file named is still there: %v", err)
	}
	if err := removeIfID(a, ia.id); err != nil {
		t.Errorf("a file already gone: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.reap")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
