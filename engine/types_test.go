package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

func packedType(name, layout string) ingest.Type {
	return ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaLayout, Data: []byte(layout)}}
}

func statusOf(t *testing.T, r *Recorder, id ingest.TopicID) TopicStatus {
	t.Helper()
	for _, s := range r.Topics() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("topic %d not in Topics()", id)
	return TopicStatus{}
}

// TestTopicTypeDeclaredOverriddenRefused: the type a topic is recorded
// under is the source's, or the configuration's override, or raw when the
// check refuses it (recording goes on, the cause in the status).
func TestTopicTypeDeclaredOverriddenRefused(t *testing.T) {
	speed := packedType("vehicle.Speed", "f32le speed")
	over := packedType("radar.Frame", "u16le n")
	refuse := errors.New("layout:1:1: unknown type f33le")
	r, _ := newTestRecorder(t, Config{
		Topics: []TopicOverride{{Match: "radar/*", Type: over}},
		CheckType: func(info ingest.TopicInfo) error {
			if string(info.Type.Schema.Data) == "f33le speed" {
				return refuse
			}
			return info.Type.Validate()
		},
	})
	f := func(info ingest.TopicInfo, want ingest.Type, wantErr string) {
		t.Helper()
		id, err := r.Discover(info)
		if err != nil {
			t.Fatalf("%s: Discover: %v", info.Name, err)
		}
		if !r.Ingest(id, 0, []byte{1, 2, 3, 4}) {
			t.Errorf("%s: not recorded", info.Name)
		}
		st := statusOf(t, r, id)
		if !st.Info.Type.Equal(want) {
			t.Errorf("%s: recorded as %v, want %v", info.Name, st.Info.Type, want)
		}
		if got := ""; st.TypeErr != nil || wantErr != "" {
			if st.TypeErr != nil {
				got = st.TypeErr.Error()
			}
			if wantErr == "" || !strings.Contains(got, wantErr) {
				t.Errorf("%s: TypeErr %q, want it to say %q", info.Name, got, wantErr)
			}
		}
	}
	f(ingest.TopicInfo{Name: "vehicle/speed", Type: speed}, speed, "")
	f(ingest.TopicInfo{Name: "plain"}, ingest.Raw(""), "")
	f(ingest.TopicInfo{Name: "named", Type: ingest.Type{Schema: ingest.Schema{Name: "legacy.Name"}}}, ingest.Raw("legacy.Name"), "")
	f(ingest.TopicInfo{Name: "radar/front", Type: speed}, over, "")
	f(ingest.TopicInfo{Name: "bad", Type: packedType("b.B", "f33le speed")}, ingest.Raw("b.B"),
		`topic "bad": type x-edr-packed b.B refused, recorded as raw bytes: layout:1:1: unknown type f33le`)
	f(ingest.TopicInfo{Name: "invalid", Channel: "c", Type: ingest.Type{MessageEncoding: ingest.EncodingProtobuf}}, ingest.Raw(""),
		`topic "invalid#c": type protobuf refused`)
	// The configuration's override is checked when the recorder is made.
	if _, err := New(Config{CacheSize: 1 << 20, Topics: []TopicOverride{{Match: "a", Type: ingest.Type{MessageEncoding: "json\n"}}}}); err == nil ||
		!strings.Contains(err.Error(), "Topics[0].Type") {
		t.Errorf("New with a malformed Type override: %v, want an error naming Topics[0].Type", err)
	}
}

// TestTopicTypeChange: a topic rediscovered with another type (its
// producer restarted) gets a new span from its next message; the window
// says which type each message has; the same type again changes nothing.
func TestTopicTypeChange(t *testing.T) {
	a, b := packedType("v.A", "u8 a"), packedType("v.B", "u16le b")
	r, vc := newTestRecorder(t, Config{Pre: new(time.Hour), Post: new(time.Second)})
	id, _ := r.Discover(ingest.TopicInfo{Name: "x", Type: a})
	for range 3 {
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, []byte{1})
	}
	r.Offline(id)
	if id2, _ := r.Discover(ingest.TopicInfo{Name: "x", Type: b}); id2 != id {
		t.Fatalf("rediscovery gave id %d, want %d", id2, id)
	}
	for range 2 {
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, []byte{1, 2})
	}
	if _, err := r.Discover(ingest.TopicInfo{Name: "x", Type: b}); err != nil { // same type: no new span
		t.Fatal(err)
	}
	st := statusOf(t, r, id)
	if !st.Info.Type.Equal(b) || st.TypeChanges != 1 {
		t.Errorf("status: type %v, %d changes; want %v, 1", st.Info.Type, st.TypeChanges, b)
	}
	ws := r.Select(Selection{TimeNs: vc.Now()})
	defer r.Unpin(ws...)
	w := &ws[0]
	if len(w.Types) != 2 || w.Types[0].FromSeq != 0 || w.Types[1].FromSeq != 3 || !w.Info.Type.Equal(b) {
		t.Fatalf("window types %+v, info %v; want spans from 0 (A) and 3 (B)", w.Types, w.Info.Type)
	}
	c := NewWindowCursor(w)
	c.Position()
	var got []string
	for {
		e, ok := c.Peek()
		if !ok {
			break
		}
		got = append(got, w.TypeAt(e.Seq).Type.Schema.Name)
		c.Skip(e)
	}
	if strings.Join(got, ",") != "v.A,v.A,v.A,v.B,v.B" {
		t.Errorf("message types %v, want v.A×3 then v.B×2", got)
	}
}

// TestTypeSpansBounded: a producer restarting with a new type over and
// over keeps at most maxTypeSpans spans, the newest.
func TestTypeSpansBounded(t *testing.T) {
	r, vc := newTestRecorder(t, Config{Pre: new(time.Hour)})
	var id ingest.TopicID
	for i := range 3 * maxTypeSpans {
		id, _ = r.Discover(ingest.TopicInfo{Name: "x", Type: packedType("v.T", strings.Repeat("u8 a;", 1)+" u8 b"+strings.Repeat("x", i))})
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, []byte{1, 2})
	}
	ws := r.Select(Selection{TimeNs: vc.Now()})
	defer r.Unpin(ws...)
	if n := len(ws[0].Types); n != maxTypeSpans || ws[0].Types[n-1].FromSeq != 3*maxTypeSpans-1 {
		t.Errorf("%d spans, last from %d; want %d, from %d", n, ws[0].Types[n-1].FromSeq, maxTypeSpans, 3*maxTypeSpans-1)
	}
}
