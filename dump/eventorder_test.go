package dump

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// stampAt0 reads a little-endian int64 event time at offset 0: what a
// schema.EventTime of "u64le t (ns)" does, without the schema room.
func stampAt0(msg []byte) (int64, bool) {
	if len(msg) < 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(msg)), true
}

func onlyTopic(name string) func(*ingest.TopicInfo) *EventField {
	return func(t *ingest.TopicInfo) *EventField {
		if t.Name == name {
			return &EventField{Path: "t", Unit: "ns", Ns: stampAt0}
		}
		return nil
	}
}

// collector records what a stage writes.
type collector struct {
	got   []collected
	short int // messages without an event time
}

type collected struct {
	topic string
	key   int64
	cap   int64
}

func (c *collector) WriteMessage(t *ingest.TopicInfo, gen, capNs int64, data []byte) error {
	k, ok := stampAt0(data)
	if !ok {
		c.short++
		return nil
	}
	c.got = append(c.got, collected{t.Name, k, capNs})
	return nil
}

// lateIn counts, per topic, the messages whose key is below that of an
// earlier one of the topic: what Late must equal.
func lateIn(got []collected, topic string) (late uint64, n int) {
	var max int64
	seen := false
	for _, g := range got {
		if g.topic != topic {
			continue
		}
		n++
		if seen && g.key < max {
			late++
		}
		if !seen || g.key > max {
			max, seen = g.key, true
		}
	}
	return late, n
}

// TestEventOrderStage: messages arriving out of event-time order by up to
// 50 ms (inside a 60 ms window) are written in order; ones delayed beyond
// the window are written in arrival order and counted exactly; a topic
// without an event time passes through in capture order; a message
// without its field is counted apart.
func TestEventOrderStage(t *testing.T) {
	msg := func(ev int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(ev)) }
	a := &ingest.TopicInfo{Name: "a"}
	b := &ingest.TopicInfo{Name: "b"}
	o := &EventOrder{EventTime: onlyTopic("a"), Window: 60 * time.Millisecond}
	c := &collector{}
	s := o.NewStage(c)
	var beyond int
	for i := range 1000 {
		capNs := t0 + int64(i)*ms
		// event time: 5 ms before capture, minus a delay of 0..50 ms
		// (deterministic), and every 97th message 200 ms late
		delay := int64((i*7919)%51) * ms
		if i%97 == 50 {
			delay = 200 * ms
			beyond++
		}
		if err := s.WriteMessage(a, 0, capNs, msg(capNs-5*ms-delay)); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteMessage(b, 0, capNs, msg(int64(1000-i))); err != nil { // b's "field" goes backwards: not ordered
			t.Fatal(err)
		}
	}
	if err := s.WriteMessage(a, 0, t0+1000*ms, []byte{1, 2}); err != nil { // too short for its event time
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	info := dumpinfo.Info{Topics: []dumpinfo.TopicAccount{{Topic: pack.Topic("a", "")}, {Topic: pack.Topic("b", "")}}}
	s.Account(&info)
	late, n := lateIn(c.got, "a")
	if n != 1000 || c.short != 1 {
		t.Fatalf("%d messages of a written, want 1000 (and the short one)", n)
	}
	acc := info.Topics[0]
	// each 200 ms straggler is late, and nothing else is
	if acc.Late != late || late != uint64(beyond) || acc.Order != dumpinfo.OrderEvent || acc.EventTimeMissing != 1 || acc.EventTime != "t" || acc.EventTimeUnit != "ns" {
		t.Fatalf("account %+v; late in the output %d, stragglers %d", acc, late, beyond)
	}
	// the event-time span: the least and greatest key written (the
	// message too short for a key does not count)
	lo, hi := int64(1<<62), int64(-1<<62)
	for _, g := range c.got {
		if g.topic == "a" {
			lo, hi = min(lo, g.key), max(hi, g.key)
		}
	}
	if acc.EventFirstNs != lo || acc.EventLastNs != hi {
		t.Fatalf("event span %d..%d, want %d..%d", acc.EventFirstNs, acc.EventLastNs, lo, hi)
	}
	if b := info.Topics[1]; b.Order != "" || b.Late != 0 || b.EventFirstNs != 0 || b.EventLastNs != 0 {
		t.Fatalf("b: %+v", b)
	}
	var bCaps []int64
	for _, g := range c.got {
		if g.topic == "b" {
			bCaps = append(bCaps, g.cap)
		}
	}
	if !slices.IsSorted(bCaps) || len(bCaps) != 1000 {
		t.Fatalf("b is not in capture order (%d messages)", len(bCaps))
	}
}

// TestEventOrderBounds: the stage never holds more than MaxMessages
// messages or MaxBytes bytes; what the bounds push out early makes later
// messages late, and those are counted exactly too.
func TestEventOrderBounds(t *testing.T) {
	a := &ingest.TopicInfo{Name: "a"}
	for _, o := range []*EventOrder{
		{EventTime: onlyTopic("a"), Window: time.Hour, MaxMessages: 16},
		{EventTime: onlyTopic("a"), Window: time.Hour, MaxBytes: 16 * 64},
	} {
		c := &collector{}
		s := o.NewStage(c).(*eventStage)
		for i := range 500 {
			ev := t0 + int64((i*7919)%500)*ms // a permutation: any order
			data := append(binary.LittleEndian.AppendUint64(nil, uint64(ev)), make([]byte, 56)...)
			if err := s.WriteMessage(a, 0, t0+int64(i)*ms, data); err != nil {
				t.Fatal(err)
			}
			if s.h.Len() > 16 || s.bytes > 16*64 {
				t.Fatalf("%+v: holds %d messages, %d bytes", o, s.h.Len(), s.bytes)
			}
		}
		s.Flush()
		info := dumpinfo.Info{Topics: []dumpinfo.TopicAccount{{Topic: pack.Topic("a", "")}}}
		s.Account(&info)
		late, n := lateIn(c.got, "a")
		if n != 500 || info.Topics[0].Late != late || late == 0 {
			t.Fatalf("%+v: %d written, late %d in the output, account %+v", o, n, late, info.Topics[0])
		}
	}
}

// upper is a program's own write-path transform: it upper-cases payloads
// of topic "a", drops those of "drop", and records how many it changed.
type upper struct{}

type upperStage struct {
	next    MessageWriter
	changed uint64
}

func (upper) NewStage(next MessageWriter) Stage { return &upperStage{next: next} }

func (u *upperStage) WriteMessage(t *ingest.TopicInfo, gen, capNs int64, data []byte) error {
	switch t.Name {
	case "drop":
		return nil
	case "a":
		u.changed++
		out := append([]byte(nil), data...) // the event time, then text
		copy(out[8:], bytes.ToUpper(out[8:]))
		return u.next.WriteMessage(t, gen, capNs, out)
	}
	return u.next.WriteMessage(t, gen, capNs, data)
}
func (u *upperStage) Flush() error { return nil }
func (u *upperStage) Account(info *dumpinfo.Info) {
	for i := range info.Topics {
		if info.Topics[i].Topic == pack.Topic("a", "") {
			info.Topics[i].Cut = u.changed // any count a transform keeps: here in Cut, for the test
		}
	}
}

// TestDumpTransforms: Config.Transforms run in the dumper's write path, in
// order: a program's own transform rewrites and drops frames, then
// EventOrder orders "a" by the event time in its payload, counts the one
// message more than its window late in the dump's accounting, the
// Result and the dumper's Status.
func TestDumpTransforms(t *testing.T) {
	eo := &EventOrder{EventTime: onlyTopic("a"), Window: 30 * time.Millisecond}
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0))},
		Dump: Config{Transforms: []Transform{upper{}, eo}}})
	ids := discover(t, r, "a", "drop", "c")
	for i := range 100 {
		ns := t0 + int64(i)*10*ms
		vc.Set(ns)
		ev := ns - int64(i%3)*10*ms // out of order by up to 20 ms
		if i == 60 {
			ev = ns - 100*ms // beyond the 30 ms window
		}
		r.Ingest(ids["a"], ns-1, append(binary.LittleEndian.AppendUint64(nil, uint64(ev)), "xyz"...))
		r.Ingest(ids["drop"], ns-1, []byte("gone"))
		r.Ingest(ids["c"], ns-1, []byte("c"))
	}
	id, _ := r.Trigger(TriggerParams{Reason: "transforms"})
	vc.Set(t0 + 3000*ms)
	res := wait(t, r, id)
	if res.Err != nil || res.Late != 1 || r.Status().Late != 1 {
		t.Fatalf("result %+v, status late %d", res, r.Status().Late)
	}
	msgs, info := readDump(t, res.Path)
	var as []collected
	counts := map[string]int{}
	for _, m := range msgs {
		counts[m.topic]++
		if m.topic == "a" {
			if !strings.HasSuffix(m.data, "XYZ") {
				t.Fatalf("a not rewritten: %q", m.data)
			}
			ev, _ := stampAt0([]byte(m.data))
			as = append(as, collected{topic: "a", key: ev})
		}
	}
	late, _ := lateIn(as, "a")
	if counts["a"] != 100 || counts["drop"] != 0 || counts["c"] != 100 || late != 1 {
		t.Fatalf("counts %v, late in the file %d", counts, late)
	}
	for _, a := range info.Topics {
		if a.Topic == pack.Topic("a", "") && (a.Order != dumpinfo.OrderEvent || a.Late != 1 || a.Cut != 100) {
			t.Fatalf("account of a: %+v", a)
		}
	}
}
