package replay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/shm"
)

// A closed loop in one process: a node (a real shm consumer and producer
// on the segment directory the replay publishes into) answers each speed
// sample with a decision; the loop's private recorder collects it.

// decisionLayout is the test node's output: a packed struct.
const decisionLayout = "f32le speed (m/s); f32le command; u8 brake"

// decide is the test node's logic: brake in proportion to the kinetic
// energy above the threshold speed.
func decide(speed, threshold float32) []byte {
	cmd := (speed*speed - threshold*threshold) * 0.01
	cmd = max(0, min(1, cmd))
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(speed))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(cmd))
	brake := byte(0)
	if cmd > 0 {
		brake = 1
	}
	return append(b, brake)
}

// testNode is a node under test: it reads vehicle/speed from dir and
// publishes decide(speed) on planner/brake with the input's producer time.
type testNode struct {
	prod *shm.Producer
	cons *shm.Consumer
	mu   sync.Mutex
	f    func(speed float32) []byte
	ack  *shm.Producer
	seen int
}

func startNode(t testing.TB, dir string, f func(speed float32) []byte, ack string) *testNode {
	t.Helper()
	n := &testNode{f: f}
	var err error
	if n.prod, err = shm.NewProducer(dir, shm.ProducerOptions{Name: "planner/brake", Type: ingest.Named("test.Decision")}); err != nil {
		t.Fatal(err)
	}
	if ack != "" {
		if n.ack, err = shm.NewProducer(dir, shm.ProducerOptions{Name: ack}); err != nil {
			t.Fatal(err)
		}
	}
	if n.cons, err = shm.NewConsumer(dir, n, shm.ConsumerOptions{KeepFiles: true}); err != nil {
		t.Fatal(err)
	}
	if err := n.cons.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}

func (n *testNode) stop() {
	n.cons.Close()
	n.prod.Close()
	if n.ack != nil {
		n.ack.Close()
	}
}

func (n *testNode) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	if info.Name != "vehicle/speed" {
		return 0, errors.New("not an input")
	}
	return 0, nil
}
func (n *testNode) Now() int64                         { return time.Now().UnixNano() }
func (n *testNode) Offline(ingest.TopicID)             {}
func (n *testNode) Lost(ingest.TopicID, int64, uint64) {}
func (n *testNode) IngestAt(_ ingest.TopicID, _, gen int64, p []byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	v := math.Float32frombits(binary.LittleEndian.Uint32(p))
	n.prod.Publish(gen, n.f(v))
	n.seen++
	if n.ack != nil {
		n.ack.Publish(gen, binary.LittleEndian.AppendUint64(nil, uint64(n.seen)))
	}
	return true
}

// loopDump is 100 speed samples at 100 Hz (cruise at 20 m/s, braking from
// sample 40) and the outputs decide(speed, 18) recorded 300µs after each.
func loopDump(t *testing.T) string {
	var msgs []rec
	for i := 0; i < 100; i++ {
		v := float32(20)
		if i >= 40 {
			v = 20 - float32(i-40)*0.25
		}
		ts := t0 + int64(i)*10e6
		msgs = append(msgs, rec{name: "vehicle/speed", gen: ts - 1000, done: ts, data: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))})
		msgs = append(msgs, rec{name: "planner/brake", gen: ts - 1000, done: ts + 300e3, data: decide(v, 18)})
	}
	return writeDump(t, "loop.pack", msgs, nil)
}

func runLoop(t *testing.T, dump string, popts Options, lo LoopOptions, dir string) *LoopResult {
	t.Helper()
	l, err := NewLoop([]string{dump}, popts, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := l.Run(context.Background(), NewShm(ShmOptions{Dir: dir}))
	if err != nil {
		t.Fatalf("%v (result %+v)", err, res)
	}
	return res
}

func mismatchText(res *LoopResult) string {
	var b strings.Builder
	for _, m := range res.Mismatches {
		b.WriteString(m.String() + "\n")
	}
	return b.String()
}

func mustLayout(t *testing.T) schema.Decoder {
	l, err := schema.ParseLayout([]byte(decisionLayout))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLoopFullExact(t *testing.T) {
	dump := loopDump(t)
	dir := t.TempDir()
	startNode(t, dir, func(v float32) []byte { return decide(v, 18) }, "")
	res := runLoop(t, dump, Options{}, LoopOptions{Expect: []string{"planner/*"}, Listen: []Listen{{Shm: dir}}}, dir)
	if !res.OK || len(res.Topics) != 1 || res.Topics[0].Matched != 100 || res.Inputs != 100 {
		t.Fatalf("result %+v\n%s", res, mismatchText(res))
	}
	tr := res.Topics[0]
	if tr.Type != "test.Decision" || tr.Latency.Samples != 100 || res.Latency.P99Ns <= 0 {
		t.Errorf("topic report %+v", tr)
	}
}

// TestLoopFullMismatch: a changed threshold makes the node answer
// differently from sample 40 on; every differing step is listed with its
// field when a schema is given, at the first differing byte without.
func TestLoopFullMismatch(t *testing.T) {
	dump := loopDump(t)
	for _, withSchema := range []bool{true, false} {
		t.Run(fmt.Sprint("schema=", withSchema), func(t *testing.T) {
			dir := t.TempDir()
			startNode(t, dir, func(v float32) []byte { return decide(v, 17) }, "")
			var checks []Check
			if withSchema {
				checks = []Check{{Topic: "planner/brake", Decoder: mustLayout(t), Schema: "test"}}
			}
			res := runLoop(t, dump, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}}, Checks: checks}, dir)
			text := mismatchText(res)
			// speeds 20 down to 17.25 brake differently (20 samples at
			// steps 1..52); from 17 down both give 0
			if res.OK || res.Topics[0].Differing == 0 || res.Topics[0].Matched+res.Topics[0].Differing != 100 {
				t.Fatalf("result %+v\n%s", res.Topics, text)
			}
			want := "planner/brake step 1 (planner/brake seq 0 at +300µs): value command: expected 0.76, got 1"
			if !withSchema {
				want = "planner/brake step 1 (planner/brake seq 0 at +300µs): value bytes[4]: expected "
			}
			if !strings.Contains(text, want) {
				t.Errorf("mismatches do not name %q:\n%s", want, text)
			}
		})
	}
}

// TestLoopTolerance: a rounding change passes a tolerance check and fails
// an exact one; a real change fails both.
func TestLoopTolerance(t *testing.T) {
	dump := loopDump(t)
	round := func(v float32) []byte { // float64 arithmetic, rounded: last-bit differences
		b := decide(v, 18)
		cmd := float32(math.Max(0, math.Min(1, (float64(v)*float64(v)-18*18)*0.01)))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(cmd))
		return b
	}
	f := func(node func(float32) []byte, mode CheckMode, ok bool) {
		t.Helper()
		dir := t.TempDir()
		startNode(t, dir, node, "")
		res := runLoop(t, dump, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}},
			Checks: []Check{{Mode: mode, Abs: 1e-6, Rel: 1e-5, Decoder: mustLayout(t)}}}, dir)
		if res.OK != ok {
			t.Errorf("%v: ok %v, want %v\n%s", mode, res.OK, ok, mismatchText(res))
		}
	}
	f(round, CheckExact, false)
	f(round, CheckTolerance, true)
	f(func(v float32) []byte { return decide(v, 17.9) }, CheckTolerance, false)
	f(func(v float32) []byte { return decide(v, 17) }, CheckNone, true) // counts only
	if _, err := NewLoop([]string{dump}, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: t.TempDir()}},
		Checks: []Check{{Mode: CheckTolerance}}}); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "needs its schema") {
		t.Errorf("tolerance without a schema: %v", err)
	}
}

// TestLoopMissingAndExtra: a node that stops answering half-way, and one
// that answers twice, are reported per message.
func TestLoopMissingAndExtra(t *testing.T) {
	dump := loopDump(t)
	dir := t.TempDir()
	n := 0
	startNode(t, dir, func(v float32) []byte {
		n++
		if n > 50 {
			return nil // publishes an empty message instead: a value mismatch, not missing
		}
		return decide(v, 18)
	}, "")
	res := runLoop(t, dump, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}}, Timeout: 300 * time.Millisecond}, dir)
	if res.OK || res.Topics[0].Differing != 50 || !strings.Contains(mismatchText(res), "step 51 (planner/brake seq 50 at +500.3ms): value length: expected 9 bytes, got 0 bytes") {
		t.Fatalf("%+v\n%s", res.Topics, mismatchText(res))
	}
}

// TestLoopInputOnlyRecord: input-only writes the inputs and the collected
// outputs to a new dump, which a full replay against the same node passes.
func TestLoopInputOnlyRecord(t *testing.T) {
	dump := loopDump(t)
	dir := t.TempDir()
	startNode(t, dir, func(v float32) []byte { return decide(v, 15) }, "")
	out := filepath.Join(t.TempDir(), "session.pack")
	res := runLoop(t, dump, Options{}, LoopOptions{Mode: ModeInputOnly, Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}}, Record: out}, dir)
	if !res.OK || res.Record != out || len(res.Mismatches) != 0 || res.Topics[0].Got != 100 {
		t.Fatalf("%+v", res)
	}
	info, err := dumpfile.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, tp := range info.Topics {
		counts[tp.Name] = tp.Messages
	}
	if counts["vehicle/speed"] != 100 || counts["planner/brake"] != 100 {
		t.Fatalf("recorded %v", counts)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	// the original recording (threshold 18) no longer matches; the new one does
	dir2 := t.TempDir()
	startNode(t, dir2, func(v float32) []byte { return decide(v, 15) }, "")
	if res := runLoop(t, out, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir2}}}, dir2); !res.OK {
		t.Fatalf("full against the input-only recording:\n%s", mismatchText(res))
	}
}

// TestLoopOutputOnly re-emits the recorded outputs with their timing.
func TestLoopOutputOnly(t *testing.T) {
	dump := loopDump(t)
	l, err := NewLoop([]string{dump}, Options{Rate: 1}, LoopOptions{Mode: ModeOutputOnly, Expect: []string{"planner/*"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v := virtualPlayer(l.Player())
	var at []int64
	var ts []int64
	res, err := l.Run(context.Background(), OutputFunc(func(m *Message) error {
		if m.Topic.Name != "planner/brake" {
			t.Errorf("re-emitted %s", m.Topic)
		}
		at, ts = append(at, v.Now()), append(ts, m.TimeNs)
		return nil
	}))
	if err != nil || len(at) != 100 || res.Stats.Samples != 100 || res.Timing.Samples != 100 {
		t.Fatalf("%v %d %+v", err, len(at), res)
	}
	for i := range at {
		if at[i]-at[0] != ts[i]-ts[0] {
			t.Fatalf("output %d at +%d, recorded at +%d", i, at[i]-at[0], ts[i]-ts[0])
		}
	}
}

// TestLoopLockstepAck: each speed sample is released once the node
// acknowledged the one before.
func TestLoopLockstepAck(t *testing.T) {
	dump := loopDump(t)
	dir := t.TempDir()
	node := startNode(t, dir, func(v float32) []byte { time.Sleep(time.Millisecond); return decide(v, 18) }, "planner/ack")
	res := runLoop(t, dump, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}},
		Lockstep: LockstepAck, Ack: "planner/ack", Timeout: 20 * time.Second}, dir)
	if !res.OK || res.Topics[0].Matched != 100 || res.Lockstep != "ack" {
		t.Fatalf("%+v\n%s", res, mismatchText(res))
	}
	node.mu.Lock()
	defer node.mu.Unlock()
	if node.seen != 100 {
		t.Errorf("node saw %d inputs", node.seen)
	}
}

// TestLoopLockstepTimeout: a node that never answers stops the replay at
// the second step with an error naming it.
func TestLoopLockstepTimeout(t *testing.T) {
	dump := loopDump(t)
	dir := t.TempDir()
	l, err := NewLoop([]string{dump}, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}},
		Lockstep: LockstepOutputs, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Run(context.Background(), NewShm(ShmOptions{Dir: dir}))
	if !errors.Is(err, ErrLockstep) || !strings.Contains(err.Error(), "step 1 (the input at 2025-12-02T10:06:40Z): 0 of 1 output(s) on the expected topics within 200ms") {
		t.Fatalf("%v", err)
	}
}

func TestLoopBadOptions(t *testing.T) {
	dump := loopDump(t)
	f := func(popts Options, lo LoopOptions, want string) {
		t.Helper()
		_, err := NewLoop([]string{dump}, popts, lo)
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", lo, err, want)
		}
	}
	ls := []Listen{{Shm: t.TempDir()}}
	f(Options{}, LoopOptions{Listen: ls}, "no expected topic")
	f(Options{}, LoopOptions{Expect: []string{"nope"}, Listen: ls}, "expect nope matches no topic of the dumps (they hold planner/brake, vehicle/speed)")
	f(Options{}, LoopOptions{Expect: []string{"*/*"}, Listen: ls}, "no input to feed")
	f(Options{}, LoopOptions{Expect: []string{"planner/*"}}, "nowhere to listen")
	f(Options{Loop: true}, LoopOptions{Expect: []string{"planner/*"}, Listen: ls}, "plays the dumps once")
	f(Options{}, LoopOptions{Expect: []string{"planner/*"}, Listen: ls, Lockstep: LockstepAck}, "needs an acknowledgement topic")
	f(Options{}, LoopOptions{Expect: []string{"planner/*"}, Mode: ModeOutputOnly, Listen: ls}, "output-only re-emits")
	f(Options{Topics: []string{"a"}}, LoopOptions{Expect: []string{"planner/*"}, Mode: ModeOutputOnly}, "output-only replays the expected topics")
	f(Options{}, LoopOptions{Expect: []string{"planner/*"}, Listen: ls, Checks: []Check{{Align: AlignNearest}}}, "needs a window")
}

// TestLoopInputOnlyNewTopic: input-only over a dump of inputs alone
// collects the node's outputs named by Collect under their own names and
// records them; an expected topic the dump does not hold is refused in
// input-only mode as in full mode (issue 30 item 13).
func TestLoopInputOnlyNewTopic(t *testing.T) {
	var msgs []rec
	for i := 0; i < 50; i++ {
		ts := t0 + int64(i)*10e6
		msgs = append(msgs, rec{name: "vehicle/speed", gen: ts, done: ts, data: binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(10+i)))})
	}
	dump := writeDump(t, "inputs.pack", msgs, nil)
	dir := t.TempDir()
	startNode(t, dir, func(v float32) []byte { return decide(v, 18) }, "")
	out := filepath.Join(t.TempDir(), "session.mcap")
	if _, err := NewLoop([]string{dump}, Options{}, LoopOptions{Expect: []string{"planner/*"}, Listen: []Listen{{Shm: dir}}}); !errors.Is(err, ErrOptions) {
		t.Fatalf("full mode with nothing recorded to compare: %v", err)
	}
	if _, err := NewLoop([]string{dump}, Options{}, LoopOptions{Mode: ModeInputOnly, Expect: []string{"planner/*"}, Listen: []Listen{{Shm: dir}}}); !errors.Is(err, ErrOptions) ||
		!strings.Contains(err.Error(), "expect planner/* matches no topic of the dumps (they hold vehicle/speed); an output the recording does not hold is named with collect") {
		t.Fatalf("input-only, an expected topic the dump does not hold: %v", err)
	}
	res := runLoop(t, dump, Options{}, LoopOptions{Mode: ModeInputOnly, Collect: []string{"planner/*"}, Listen: []Listen{{Shm: dir}}, Record: out}, dir)
	if len(res.Topics) != 1 || res.Topics[0].Topic != "planner/brake" || res.Topics[0].Got != 50 || res.Topics[0].Recorded != 0 {
		t.Fatalf("%+v", res.Topics)
	}
	info, err := dumpfile.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != "mcap" || info.Messages != 100 {
		t.Fatalf("recorded %+v", info)
	}
}
