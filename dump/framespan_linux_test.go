package dump

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/pack"
)

// TestFrameSpan (issue #31, item 1): every pack writer of the recorder
// closes a frame when a message comes FrameSpan or more after its first
// (the default, 250 ms), whatever path the payloads take (small ones
// copied into the frame's scratch, reserved there or large ones borrowed
// from the rings), and every payload reads back as ingested.
func TestFrameSpan(t *testing.T) {
	for _, w := range []struct {
		name string
		nw   NewWriterFunc
	}{
		{"write", NewPackWriteWriter},
		{"write-copying", NewPackWriteWriterTuned(PackWriteTuning{Copying: true})},
		{"write-async", NewPackWriteWriterTuned(PackWriteTuning{Async: true})},
		{"stream", NewPackStreamWriter},
		{"mmap", NewPackMmapWriter},
	} {
		t.Run(w.name, func(t *testing.T) {
			r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(2 * time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)), TopicBytes: 1 << 20},
				Dump: Config{NewWriter: w.nw}})
			ids := discover(t, r, "small", "big")
			payload := func(name string, ns int64) []byte {
				if name == "small" {
					return []byte(fmt.Sprintf("small@%d", (ns-t0)/ms))
				}
				return bytes.Repeat([]byte{byte(ns / ms), byte(ns / ms >> 8), 'b'}, 1500) // 4500 B: borrowed
			}
			for ns := t0; ns <= t0+1990*ms; ns += 10 * ms {
				vc.Set(ns)
				for _, name := range []string{"small", "big"} {
					r.Ingest(ids[name], ns-1, payload(name, ns))
				}
			}
			id, err := r.Trigger(TriggerParams{Reason: "span"})
			if err != nil {
				t.Fatal(err)
			}
			vc.Set(t0 + 2100*ms)
			res := wait(t, r, id)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			pr, err := pack.Open(res.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			var f pack.Frame
			frames, msgs := 0, 0
			for {
				if err := pr.ReadInto(&f); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				frames++
				first := f.Message(0).DoneTs
				for i := range f.Len() {
					m := f.Message(i)
					if m.DoneTs-first >= int64(DefaultFrameSpan) {
						t.Fatalf("frame %d: a message %v after its first", frames, time.Duration(m.DoneTs-first))
					}
					if !bytes.Equal(f.Data(i), payload(m.Name, m.DoneTs)) {
						t.Fatalf("frame %d: %s at %d: payload %q...", frames, m.Name, m.DoneTs, f.Data(i)[:min(len(f.Data(i)), 12)])
					}
					msgs++
				}
			}
			if msgs != 400 || frames != 8 {
				t.Fatalf("%d messages in %d frames, want 400 in 8 (2 s of 250 ms frames)", msgs, frames)
			}
		})
	}
}
