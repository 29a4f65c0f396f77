package pack

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// seekMsg is one message of the seek property test: its name says where
// it is in the stream.
type seekMsg struct {
	name      string
	gen, done int64
}

// TestSeekTimeExact (issue #31, item 2): after SeekTime(T), reading to the
// end yields exactly the messages whose time (MessageTime) is >= T, in file
// order, whatever the frame bounds: random message streams (times rising
// with jitter, some without a capture time, some without any time, some
// out of order), cut into frames at random bounds, read indexed and
// without an index, with and without read-ahead, with and without data;
// T at every message time, one before and one after, and beyond both ends.
// Before, SeekTime went to the first frame whose time was >= T, so the
// messages >= T of the frame running at T were skipped.
func TestSeekTimeExact(t *testing.T) {
	defer func(m int64) { aheadMinFrame = m }(aheadMinFrame)
	aheadMinFrame = 0
	rng := rand.New(rand.NewPCG(2, 31))
	for trial := range 40 {
		n := 1 + rng.IntN(300)
		msgs := make([]seekMsg, n)
		ts := int64(1_000_000)
		for i := range msgs {
			ts += int64(rng.IntN(1000))
			m := seekMsg{name: fmt.Sprint("m", i), gen: ts - 50, done: ts}
			switch rng.IntN(12) {
			case 0:
				m.done = 0 // producer time only
			case 1:
				m.gen, m.done = 0, 0 // the frame's time
			case 2:
				m.done -= int64(rng.IntN(3000)) // late: out of order
			}
			msgs[i] = m
		}
		// Random frame bounds; a frame's time is its first message's
		// capture time, or a time of its own before it.
		var bounds []int
		for i := 1; i < n; i++ {
			if rng.IntN(1+trial%7) == 0 {
				bounds = append(bounds, i)
			}
		}
		bounds = append(bounds, n)
		var buf bytes.Buffer
		w, err := NewStreamWriter(&buf, WriterOptions{Compression: Compression(trial % 3)})
		if err != nil {
			t.Fatal(err)
		}
		type placed struct {
			name string
			time int64
		}
		var all []placed
		start := 0
		for k, end := range bounds {
			ft := msgs[start].done
			if ft == 0 || rng.IntN(3) == 0 {
				ft = msgs[start].gen - int64(rng.IntN(500))
			}
			f := NewFrame(uint64(k), ft)
			for _, m := range msgs[start:end] {
				f.AddMetaWithData(m.name, "", nil, m.gen, m.done, []byte(m.name))
				mm := Message{GenTs: m.gen, DoneTs: m.done}
				all = append(all, placed{m.name, MessageTime(&mm, ft)})
			}
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
			start = end
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		file := buf.Bytes()
		var times []int64
		for _, p := range all {
			times = append(times, p.time-1, p.time, p.time+1)
		}
		times = append(times, -1<<63, 1<<63-1, 0)
		for _, indexed := range []bool{true, false} {
			b := file
			if !indexed {
				r, _ := NewBytesReader("x", file, ReaderOptions{})
				b = file[:r.end]
			}
			for _, ahead := range []int{0, 1} {
				r, err := NewBytesReader("seek.pack", b, ReaderOptions{ReadAhead: ahead})
				if err != nil {
					t.Fatal(err)
				}
				var f Frame
				for _, T := range times {
					var want []string
					for _, p := range all {
						if p.time >= T {
							want = append(want, p.name)
						}
					}
					for _, withData := range []bool{true, false} {
						if err := r.SeekTime(T); err != nil {
							t.Fatal(err)
						}
						var got []string
						for {
							var err error
							if withData {
								err = r.ReadInto(&f)
							} else {
								err = r.ReadMetaInto(&f)
							}
							if err == io.EOF {
								break
							}
							if err != nil {
								t.Fatal(err)
							}
							if f.Len() == 0 {
								t.Fatalf("an empty frame after SeekTime(%d)", T)
							}
							for i := range f.Len() {
								m := f.Message(i)
								got = append(got, m.Name)
								if withData && string(f.Data(i)) != m.Name {
									t.Fatalf("message %s: data %q", m.Name, f.Data(i))
								}
							}
						}
						if !slices.Equal(got, want) {
							t.Fatalf("trial %d (%d messages, %d frames, indexed %v, read-ahead %d, data %v): SeekTime(%d) read %d messages %v, want %d %v",
								trial, n, len(bounds), indexed, ahead, withData, T, len(got), head(got), len(want), head(want))
						}
					}
				}
				// SeekFrame and Rewind read whole frames again.
				r.Rewind()
				total := 0
				for r.ReadInto(&f) == nil {
					total += f.Len()
				}
				if total != n {
					t.Fatalf("after Rewind: %d messages, want %d", total, n)
				}
				r.Close()
			}
		}
	}
}

func head(s []string) []string {
	if len(s) > 6 {
		return append(slices.Clip(s[:3]), "...", s[len(s)-1])
	}
	return s
}

// TestSeekTimeFirstFrame: a seek to a time the first frame reaches
// (replay seeks to its first message) reads that frame's meta only, not
// every frame's (the covers SeekTime searches are not built: that pass
// was a fifth of replay's time at 64 B), and reads return the same
// messages; a seek further on builds them.
func TestSeekTimeFirstFrame(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 5 {
		f := NewFrame(uint64(k), int64(100*k+100))
		for i := range 3 {
			ts := int64(100*k + 100 + i)
			f.AddMetaWithData(fmt.Sprint("m", k, i), "", nil, ts, ts, []byte{byte(i)})
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("s.pack", buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		var f Frame
		for {
			if err := r.ReadInto(&f); err == io.EOF {
				return n
			} else if err != nil {
				t.Fatal(err)
			}
			n += f.Len()
		}
	}
	for _, ns := range []int64{0, 100, 101, 102} {
		if err := r.SeekTime(ns); err != nil {
			t.Fatal(err)
		}
		if r.covers != nil {
			t.Fatalf("SeekTime(%d) into the first frame read every frame's meta", ns)
		}
		if got, want := count(), 15-max(0, int(ns)-100); got != want {
			t.Fatalf("SeekTime(%d): %d messages, want %d", ns, got, want)
		}
	}
	if err := r.SeekTime(301); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 8 || r.covers == nil {
		t.Fatalf("SeekTime(301): %d messages (want 8), covers built: %v", got, r.covers != nil)
	}
}
