package dumpfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

func writeTimesPack(t *testing.T, path string, topic string, times []int64) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{TargetFrameSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range times {
		if err := w.Add(topic, "", nil, 0, ts, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Topics: []dumpinfo.TopicAccount{{Topic: topic, Messages: uint64(len(times)), Overwritten: 2}},
		Triggers: []dumpinfo.Trigger{{Reason: topic + "-trigger", TimeNs: times[0]}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeTimesPack(t, p, "a", []int64{1, 2})
	if f, err := Detect(p); err != nil || f != FormatPack {
		t.Errorf("Detect(pack) = %q, %v", f, err)
	}
	j := filepath.Join(dir, "junk")
	os.WriteFile(j, []byte("MCAP? no"), 0o644)
	if _, err := Detect(j); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Detect(junk) err = %v", err)
	}
	if _, err := Detect(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("Detect(missing) err = %v", err)
	}
}

// TestMergeOrderAndTies: messages come out in time order, equal times in
// input order, and the dump information of every input survives.
func TestMergeOrderAndTies(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeTimesPack(t, a, "a", []int64{10, 20, 30, 30, 50})
	writeTimesPack(t, b, "b", []int64{5, 20, 30, 60})
	out := filepath.Join(dir, "ab.pack")
	rep, err := Merge([]string{a, b}, out, pack.WriterOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 9 || rep.Triggers != 2 {
		t.Fatalf("report = %+v", rep)
	}
	type tm struct {
		topic string
		ts    int64
	}
	var got []tm
	if err := Walk(out, func(m *Msg) error { got = append(got, tm{m.Topic, m.TimeNs}); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []tm{{"b", 5}, {"a", 10}, {"a", 20}, {"b", 20}, {"a", 30}, {"a", 30}, {"b", 30}, {"a", 50}, {"b", 60}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d = %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	in, err := ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Triggers) != 2 || len(in.Topics) != 2 || in.Topics[0].Overwritten != 2 {
		t.Errorf("merged info = %+v", in)
	}
	if _, err := Merge(nil, out, pack.WriterOptions{}, nil); err == nil {
		t.Error("merge of nothing accepted")
	}
}

// TestMergeEventSpan: a merge of dumps ordered by event time holds the
// union of their event-time spans; a cut that leaves messages of a topic
// out does not claim the inputs' span.
func TestMergeEventSpan(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, times []int64, first, last int64) string {
		p := filepath.Join(dir, name)
		w, err := pack.Create(p, pack.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, ts := range times {
			if err := w.Add("imu", "", nil, 0, ts, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.SetDumpInfo(dumpinfo.Info{Topics: []dumpinfo.TopicAccount{{Topic: "imu#", Messages: uint64(len(times)),
			Order: dumpinfo.OrderEvent, EventTime: "t", EventTimeUnit: "ns", EventFirstNs: first, EventLastNs: last}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.pack", []int64{100, 200, 300}, 90, 290)
	b := write("b.pack", []int64{400, 500}, 380, 495)
	out := filepath.Join(dir, "ab.pack")
	if _, err := Merge([]string{b, a}, out, pack.WriterOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	in, err := ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Topics) != 1 || in.Topics[0].EventFirstNs != 90 || in.Topics[0].EventLastNs != 495 || in.Topics[0].Order != dumpinfo.OrderEvent {
		t.Fatalf("merged topics %+v, want the event span 90..495", in.Topics)
	}
	cut := filepath.Join(dir, "cut.pack")
	if _, err := Rewrite([]*Source{openOne(t, out)}, Output{Path: cut}, RewriteOptions{Window: &Window{FromNs: 150, ToNs: 450}}); err != nil {
		t.Fatal(err)
	}
	if in, err = ReadInfo(cut); err != nil {
		t.Fatal(err)
	}
	if len(in.Topics) != 1 || in.Topics[0].Cut != 2 || in.Topics[0].EventFirstNs != 0 || in.Topics[0].EventLastNs != 0 {
		t.Fatalf("cut topics %+v, want 2 cut and no event span", in.Topics)
	}
}
