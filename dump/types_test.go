package dump

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

func layoutType(name, layout string) ingest.Type {
	return ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaLayout, Data: []byte(layout)}}
}

// TestDumpTypeChange: a producer restarts with another type in the middle
// of a dump's window. Every writer (pack by write(2), mmap and stream; MCAP;
// behind the reorder stage) writes each message under its own type: the
// old one up to the restart, the new one from its first message, which is
// when the dump says the type changed.
func TestDumpTypeChange(t *testing.T) {
	A, B := layoutType("v.Speed", "u8 speed"), layoutType("v.Speed", "u16le speed (cm/s)")
	cases := []struct {
		name    string
		mk      NewWriterFunc
		ext     string
		reorder time.Duration
	}{
		{"pack", NewPackWriteWriter, "", 0},
		{"pack-mmap", NewPackMmapWriter, "", 0},
		{"pack-stream", NewPackStreamWriter, "", 0},
		{"pack-reorder", NewPackWriteWriter, "", 50 * time.Millisecond},
		{"mcap", NewMCAPWriter, MCAPExt, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(2 * time.Second), Post: new(200 * time.Millisecond), Guard: new(time.Duration(0))},
				Dump: Config{NewWriter: c.mk, Extension: c.ext, ReorderWindow: c.reorder}})
			id, _ := r.Discover(ingest.TopicInfo{Name: "speed", Type: A})
			other, _ := r.Discover(ingest.TopicInfo{Name: "other", Type: ingest.Raw("x")})
			var changeNs int64
			for i := range 150 {
				ns := t0 + int64(i)*10*ms
				vc.Set(ns)
				if i == 100 { // the producer restarts with layout B
					r.Offline(id)
					r.Discover(ingest.TopicInfo{Name: "speed", Type: B})
					changeNs = ns
				}
				if i < 100 {
					r.Ingest(id, ns, []byte{byte(i)})
				} else {
					r.Ingest(id, ns, []byte{byte(i), 0})
				}
				r.Ingest(other, ns, []byte("x"))
			}
			tid, err := r.Trigger(TriggerParams{Reason: "test"})
			if err != nil {
				t.Fatal(err)
			}
			for ns := t0 + 1500*ms; ns <= t0+1800*ms; ns += 10 * ms {
				vc.Set(ns)
			}
			res := wait(t, r, tid)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var got []string // "len:encoding-layout" of every speed message
			var changes []int64
			if c.ext == MCAPExt {
				mr, err := mcap.Open(res.Path, mcap.ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer mr.Close()
				p, err := mcap.NewPackReader(mr)
				if err != nil {
					t.Fatal(err)
				}
				var last *ingest.Type
				for {
					ok, err := p.Next()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					if m := p.Message(); m.Name == "speed" {
						got = append(got, fmt.Sprintf("%d:%s", len(m.Data), m.Type.Schema.Data))
						if m.Type != last {
							changes = append(changes, m.DoneTs)
							last = m.Type
						}
					}
				}
			} else {
				pr, err := pack.Open(res.Path)
				if err != nil {
					t.Fatal(err)
				}
				defer pr.Close()
				ts, err := pr.Types()
				if err != nil {
					t.Fatal(err)
				}
				x := pack.NewTypeIndex(ts)
				for _, tt := range x.Topic("speed", "") {
					changes = append(changes, tt.FromNs)
				}
				var f pack.Frame
				for {
					if err := pr.ReadInto(&f); err == io.EOF {
						break
					} else if err != nil {
						t.Fatal(err)
					}
					for i := range f.Len() {
						if m := f.Message(i); m.Name == "speed" {
							tt := x.At("speed", "", pr.FrameOffset())
							if tt == nil {
								t.Fatalf("a speed message without a type")
							}
							got = append(got, fmt.Sprintf("%d:%s", len(f.Data(i)), tt.Type.Schema.Data))
						}
					}
				}
			}
			if len(got) != 150 {
				t.Fatalf("%d speed messages, want 150", len(got))
			}
			for i, g := range got {
				want := "1:u8 speed"
				if i >= 100 {
					want = "2:u16le speed (cm/s)"
				}
				if g != want {
					t.Fatalf("speed message %d: %s, want %s", i, g, want)
				}
			}
			if len(changes) != 2 || changes[1] != changeNs {
				t.Errorf("type changes at %v, want 2, the second at %d", changes, changeNs)
			}
		})
	}
}
