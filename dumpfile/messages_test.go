package dumpfile

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"pgregory.net/rapid"
)

// writePack writes messages "topic@done" (gen = done-1) in the order given,
// three per frame.
func writePack(t *testing.T, name string, msgs ...string) *Source {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	w, err := pack.Create(p, pack.WriterOptions{TargetFrameSize: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var topic string
		var done int64
		fmt.Sscanf(strings.Replace(m, "@", " ", 1), "%s %d", &topic, &done)
		if err := w.Add(topic, "", nil, done-1, done, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := pack.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s, err := FromPack(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMessagesMergeAndSeek(t *testing.T) {
	a := writePack(t, "a.pack", "a@10", "a@20", "a@30", "a@40", "a@50", "a@60")
	b := writePack(t, "b.pack", "b@5", "b@20", "b@35", "b@60", "b@61")
	f := func(from int64, want string) {
		t.Helper()
		m := NewMessages(a, b)
		if from != 0 {
			if err := m.SeekTime(from); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for {
			ok, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			msg := m.Message()
			got = append(got, fmt.Sprintf("%s/%d", msg.Data, m.Source()))
			if msg.DoneNs != m.Time() || msg.TimeNs != m.Time() || msg.GenNs != msg.DoneNs-1 {
				t.Fatalf("Time %d for a message done at %d (%+v)", m.Time(), msg.DoneNs, msg)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("from %d:\n got %s\nwant %s", from, strings.Join(got, " "), want)
		}
	}
	all := "b@5/1 a@10/0 a@20/0 b@20/1 a@30/0 b@35/1 a@40/0 a@50/0 a@60/0 b@60/1 b@61/1"
	f(0, all)
	f(-5, all)
	f(20, "a@20/0 b@20/1 a@30/0 b@35/1 a@40/0 a@50/0 a@60/0 b@60/1 b@61/1")
	f(36, "a@40/0 a@50/0 a@60/0 b@60/1 b@61/1") // inside frames of both files
	f(61, "b@61/1")
	f(62, "")

	// seeking again restarts the merge
	m := NewMessages(a, b)
	m.SeekTime(60)
	m.Next()
	m.SeekTime(0)
	if ok, _ := m.Next(); !ok || m.Time() != 5 {
		t.Errorf("after a second SeekTime: first message at %d", m.Time())
	}
}

// memDump writes one message per time (data: source and position) into an
// in-memory pack dump with frames of a few messages, or its MCAP export
// (small chunks), and opens it.
func memDump(t testing.TB, src int, times []int64, asMCAP bool) *Source {
	t.Helper()
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{CreatedNs: 1, TargetFrameSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range times {
		if err := w.Add("t", strconv.Itoa(src), nil, ts, ts, []byte{byte(src), byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("src%d.pack", src)
	b := buf.Bytes()
	if asMCAP {
		r, err := pack.NewBytesReader(name, b, pack.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := mcap.ExportPack(r, &out, mcap.ExportOptions{Options: mcap.Options{ChunkSize: 64}}); err != nil {
			t.Fatal(err)
		}
		r.Close()
		name, b = fmt.Sprintf("src%d.mcap", src), out.Bytes()
	}
	s, err := OpenBytes(name, b, mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMessagesMergeProperty: several dumps, pack and MCAP in any mix, each
// in time order with many equal times, merge into one stream ordered by
// time, ties by source index, then by each source's order; SeekTime gives
// exactly the messages at or after its time, and seeking again restarts.
func TestMessagesMergeProperty(t *testing.T) {
	type at struct {
		ts       int64
		src, pos int
	}
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(0, 5).Draw(rt, "k")
		var sources []*Source
		var all []at
		for i := range k {
			times := rapid.SliceOfN(rapid.Int64Range(1, 20), 0, 30).Draw(rt, "times")
			slices.Sort(times)
			for p, ts := range times {
				all = append(all, at{ts, i, p})
			}
			s := memDump(t, i, times, rapid.Bool().Draw(rt, "mcap"))
			defer s.Close()
			sources = append(sources, s)
		}
		slices.SortFunc(all, func(a, b at) int { // source order within a time, then position
			return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.src, b.src), cmp.Compare(a.pos, b.pos))
		})
		m := NewMessages(sources...)
		for _, from := range []int64{rapid.Int64Range(-1, 22).Draw(rt, "from"), 0} {
			if err := m.SeekTime(from); err != nil {
				rt.Fatal(err)
			}
			var got []at
			for {
				ok, err := m.Next()
				if err != nil {
					rt.Fatal(err)
				}
				if !ok {
					break
				}
				msg := m.Message()
				if len(msg.Data) != 2 || int(msg.Data[0]) != m.Source() || msg.TimeNs != m.Time() {
					rt.Fatalf("message %+v from source %d at %d", msg, m.Source(), m.Time())
				}
				got = append(got, at{m.Time(), m.Source(), int(msg.Data[1])})
			}
			want := slices.DeleteFunc(slices.Clone(all), func(a at) bool { return a.ts < from })
			if !slices.Equal(got, want) {
				rt.Fatalf("from %d:\n got %v\nwant %v", from, got, want)
			}
		}
	})
}
