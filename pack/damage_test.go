package pack

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// damageFile writes a dump-like file with Add at random frame bounds
// (size and span), random codecs, type sections (one changing midway) and
// a metadata section; it returns the file and, per frame, its offset, end
// and a fingerprint of its messages.
type damageFrame struct {
	off, end int64
	key      string
}

func damageFile(t *testing.T, rng *rand.Rand) ([]byte, []damageFrame) {
	var buf bytes.Buffer
	size := 256 << rng.IntN(10) // 256 B .. 128 KiB
	span := time.Duration(1+rng.IntN(200)) * time.Millisecond
	w, err := NewStreamWriter(&buf, WriterOptions{Compression: Compression(rng.IntN(3)), TargetFrameSize: size, TargetFrameSpan: span, CreatedNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	topics := []string{"vehicle/speed", "camera/front", "lidar"}
	for _, tp := range topics {
		if err := w.SetTopicType(tp, "", ingest.Type{MessageEncoding: "json"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	ns := int64(1_700_000_000_000_000_000)
	n := 50 + rng.IntN(400)
	payload := make([]byte, 8<<10)
	for i := range payload {
		payload[i] = byte(rng.Uint32() % 7)
	}
	for i := range n {
		ns += int64(rng.IntN(20)) * 1e6
		tp := topics[rng.IntN(len(topics))]
		if i == n/2 {
			if err := w.SetTopicType(tp, "", ingest.Type{MessageEncoding: "x-edr-raw"}, ns); err != nil {
				t.Fatal(err)
			}
		}
		d := payload[:rng.IntN(len(payload))]
		if err := w.Add(tp, "", []byte(fmt.Sprint(i)), ns-1000, ns, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddMetadata("note", []byte("damage test")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(buf.Bytes())
	r, err := NewBytesReader("d.pack", b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var frames []damageFrame
	var f Frame
	for {
		off := r.Tell()
		if err := r.ReadInto(&f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, damageFrame{off: r.FrameOffset(), end: r.Tell(), key: frameKey(&f)})
		_ = off
	}
	return b, frames
}

// frameKey fingerprints a frame's messages and data.
func frameKey(f *Frame) string {
	var s []byte
	for i := range f.Len() {
		m := f.Message(i)
		s = fmt.Appendf(s, "%s %s %d %d|", m.Name, m.Meta, m.DoneTs, crc(f.Data(i)))
	}
	return string(s)
}

// recoverKeys recovers b and returns the fingerprints of the frames kept.
func recoverKeys(t *testing.T, b []byte) []string {
	var out bytes.Buffer
	_, err := RecoverTo("d.pack", b, func(o WriterOptions) (*Writer, error) { return NewStreamWriter(&out, o) })
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("r.pack", out.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var f Frame
	for {
		if err := r.ReadInto(&f); err == io.EOF {
			return keys
		} else if err != nil {
			t.Fatalf("the recovered file does not read: %v", err)
		}
		keys = append(keys, frameKey(&f))
	}
}

// TestRecoverCutKeepsEveryFrameBefore (issue #31, item 1): for random frame
// bounds and random cut points, Recover keeps every frame that ends before
// the cut, and nothing else.
func TestRecoverCutKeepsEveryFrameBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	for trial := range 30 {
		b, frames := damageFile(t, rng)
		for range 20 {
			cut := rng.Int64N(int64(len(b)) + 1)
			var want []string
			for _, fr := range frames {
				if fr.end <= cut {
					want = append(want, fr.key)
				}
			}
			if got := recoverKeys(t, b[:cut]); !slices.Equal(got, want) {
				t.Fatalf("trial %d: a cut at %d of %d bytes (%d frames): recovered %d frames, want the %d before the cut", trial, cut, len(b), len(frames), len(got), len(want))
			}
		}
	}
}

// TestRecoverFlipLosesOneFrame (issue #31, item 1): a single changed byte
// anywhere in a file (random offset, random new value) costs at most the
// one frame it falls in: Recover keeps every other frame.
func TestRecoverFlipLosesOneFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	for trial := range 30 {
		b, frames := damageFile(t, rng)
		for range 30 {
			p := rng.Int64N(int64(len(b)))
			d := bytes.Clone(b)
			d[p] ^= byte(1 + rng.IntN(255))
			var want []string
			for _, fr := range frames {
				if p < fr.off || p >= fr.end {
					want = append(want, fr.key)
				}
			}
			got := recoverKeys(t, d)
			if len(got) < len(frames)-1 {
				t.Fatalf("trial %d: byte %d of %d changed: recovered %d of %d frames", trial, p, len(b), len(got), len(frames))
			}
			for _, k := range want {
				if !slices.Contains(got, k) {
					t.Fatalf("trial %d: byte %d of %d changed: a frame outside it was lost", trial, p, len(b))
				}
			}
		}
	}
}
