//go:build !ecu

// The demo (daemon.RunDemo) is in the full build only (docs/ecu.md).

package replay

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/demo"
	"github.com/edr-lite/edr-lite/shm"
)

// liveRecorder is a real recorder with dumps and a shm consumer on segDir.
func liveRecorder(t *testing.T, segDir string) (*engine.Recorder, *dump.Dumper) {
	t.Helper()
	rec, err := engine.New(engine.Config{
		CacheSize: 64 << 20, TopicBytes: 1 << 20, Guard: new(time.Duration(0)), Pre: new(30 * time.Second), Post: new(time.Millisecond),
		Topics: []engine.TopicOverride{{Match: demo.TopicCamera, MaxBytes: 32 << 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dumper, err := dump.New(rec, dump.Config{Dir: filepath.Join(t.TempDir(), "dumps"), PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := dumper.Start(); err != nil {
		t.Fatal(err)
	}
	cons, err := shm.NewConsumer(segDir, rec, shm.ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cons.Close()
		dumper.Stop()
		rec.Close()
	})
	return rec, dumper
}

// waitWritten waits until the recorder holds want[topic] messages of each
// topic.
func waitWritten(t *testing.T, rec *engine.Recorder, want map[string]uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]uint64{}
		for _, ts := range rec.Topics() {
			got[ts.Info.Name] = ts.Counters.Written
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorder holds %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dumpNow(t *testing.T, rec *dump.Dumper, p dump.TriggerParams) string {
	t.Helper()
	id, err := rec.Trigger(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := rec.Wait(ctx, id)
	if err != nil || res.Err != nil {
		t.Fatalf("dump: %v %v", err, res.Err)
	}
	return res.Path
}

func perTopic(t *testing.T, path string) map[string][]topicMsg {
	t.Helper()
	out := map[string][]topicMsg{}
	err := dumpfile.Walk(path, func(m *dumpfile.Msg) error {
		out[m.Topic] = append(out[m.Topic], topicMsg{m.GenNs, bytes.Clone(m.Data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTripDemo is issue 9's round trip: the demo ("edr-lite demo":
// the simulated vehicle over real shm segments into a recorder running the
// shipped hard_brake rule on its rings) dumps around the hard brake. A rules
// test over that dump passes in full mode and fails with a diff when the
// threshold changes. The dump is replayed over shm into a second recorder,
// which dumps again: every topic holds the same messages, bytes and
// producer times identical, in the same order.
func TestRoundTripDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo in real time")
	}
	// 1. demo -> recorder A with the live rule -> dump
	v := demo.Vehicle{Cruise: 20, BrakeAt: time.Second, Decel: 9}
	dres, err := daemon.RunDemo(context.Background(), daemon.DemoOptions{Dir: t.TempDir(), SHMDir: t.TempDir(),
		Duration: 3500 * time.Millisecond, Vehicle: v})
	if err != nil {
		t.Fatal(err)
	}
	if len(dres.Dumps) != 1 || dres.Dumps[0].Err != nil {
		t.Fatalf("demo dumps %+v, want one", dres.Dumps)
	}
	dumpA := dres.Dumps[0].Path

	// 3. rules regression over the dump: the demo's rule sets no window
	// (the recorder's 3s/2s apply), so a rule given windows of its own
	// fires at the recorded time but differs, and the diff names them
	res, err := RunRules([]string{dumpA}, []string{"builtin:hard_brake"}, RulesOptions{Params: map[string]string{"topic": demo.TopicSpeed, "decel": "6", "pre": "15s", "post": "5s"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond); c.OK() || len(c.Changed) != 1 {
		t.Fatalf("windows 15s/5s against a dump recorded with the recorder's windows: %+v", c)
	} else {
		var d bytes.Buffer
		c.WriteDiff(&d, res.Fired, res.Recorded)
		if !strings.Contains(d.String(), "pre unset (the recorder's window) recorded, 15s fired; post unset (the recorder's window) recorded, 5s fired") {
			t.Errorf("diff does not name the windows:\n%s", d.String())
		}
	}
	// as the demo configures the rule: everything matches
	demoParams := map[string]string{"topic": demo.TopicSpeed, "decel": "6"}
	res, err = RunRules([]string{dumpA}, []string{"builtin:hard_brake"}, RulesOptions{Params: demoParams})
	if err != nil {
		t.Fatal(err)
	}
	if c := CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond); !c.OK() || len(c.Matched) != 1 {
		var d bytes.Buffer
		c.WriteDiff(&d, res.Fired, res.Recorded)
		t.Fatalf("rules test over the demo dump fails:\n%s", d.String())
	}
	demoParams["decel"] = "1000"
	res, err = RunRules([]string{dumpA}, []string{"builtin:hard_brake"}, RulesOptions{Params: demoParams})
	if err != nil {
		t.Fatal(err)
	}
	c := CompareTriggers(res.Fired, res.Recorded, res.Rules, time.Millisecond)
	var d bytes.Buffer
	c.WriteDiff(&d, res.Fired, res.Recorded)
	if c.OK() || !strings.Contains(d.String(), "- hard_brake hard-brake at ") {
		t.Fatalf("decel=1000 still passes:\n%s", d.String())
	}

	// 4. replay dump A over shm into recorder B, which dumps again
	segB := t.TempDir()
	recB, dumperB := liveRecorder(t, segB)
	p, err := Open([]string{dumpA}, Options{Rate: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := p.Run(context.Background(), NewShm(ShmOptions{Dir: segB, Capacity: 16 << 20}))
	if err != nil || st.Dropped != 0 {
		t.Fatal(err, st)
	}
	t.Logf("replayed %d messages, %d bytes at rate 2: timing error p50 %v p99 %v", st.Messages, st.Bytes, st.TimingP50, st.TimingP99)
	msgsA := perTopic(t, dumpA)
	want := map[string]uint64{}
	for topic, ms := range msgsA {
		want[topic] = uint64(len(ms))
	}
	waitWritten(t, recB, want)
	dumpB := dumpNow(t, dumperB, dump.TriggerParams{Reason: "replayed", Pre: new(30 * time.Second)})

	msgsB := perTopic(t, dumpB)
	if len(msgsA) != len(demo.Topics) || len(msgsB) != len(msgsA) {
		t.Fatalf("topics: %d in A, %d in B, want %d", len(msgsA), len(msgsB), len(demo.Topics))
	}
	for topic, a := range msgsA {
		b := msgsB[topic]
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: %d messages in A, %d in B", topic, len(a), len(b))
		}
		for i := range a {
			if a[i].gen != b[i].gen || !bytes.Equal(a[i].data, b[i].data) {
				t.Fatalf("%s message %d differs after the round trip", topic, i)
			}
		}
	}
	infoB, err := dumpfile.ReadInfo(dumpB)
	if err != nil {
		t.Fatal(err)
	}
	// every topic keeps the type its demo producer declared
	declared := map[string]ingest.Type{}
	for _, tp := range demo.Topics {
		declared[tp.Name] = tp.Type
	}
	for _, tp := range infoB.Topics {
		want := declared[tp.Name]
		if tp.Type != want.Schema.Name || tp.Encoding != want.MessageEncoding || tp.SchemaEncoding != want.Schema.Encoding ||
			tp.TypeID != want.ID().String() {
			t.Errorf("%s: type %s %s %s %s after the round trip, want %v", tp.Name, tp.Encoding, tp.Type, tp.SchemaEncoding, tp.TypeID, want)
		}
	}
}
