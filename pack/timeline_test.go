package pack

import (
	"bytes"
	"io"
	"testing"

	"pgregory.net/rapid"
)

func memFile(t testing.TB, times []int64, tag string) *Reader {
	t.Helper()
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{CreatedNs: 1})
	for i, ts := range times {
		f := NewFrame(uint64(i), ts)
		f.AddMeta(tag, "", []byte{byte(i)}, ts, ts)
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	r, err := NewBytesReader(tag, buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTimelineMergesInOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(0, 5).Draw(rt, "k")
		var readers []*Reader
		total := 0
		for i := 0; i < k; i++ {
			ts := rapid.SliceOfN(rapid.Int64Range(0, 20), 0, 30).Draw(rt, "times")
			sortI64(ts)
			total += len(ts)
			readers = append(readers, memFile(t, ts, string(rune('a'+i))))
		}
		tl := NewTimeline(readers...)
		lastT, lastSrc := int64(-1), -1
		lastID := make([]int64, k)
		for i := range lastID {
			lastID[i] = -1
		}
		n := 0
		for {
			f, src, err := tl.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rt.Fatal(err)
			}
			if f.Time() < lastT || (f.Time() == lastT && src < lastSrc) {
				rt.Fatalf("out of order: (%d, src %d) after (%d, src %d)", f.Time(), src, lastT, lastSrc)
			}
			if int64(f.ID()) != lastID[src]+1 {
				rt.Fatalf("source %d: frame %d after %d", src, f.ID(), lastID[src])
			}
			lastID[src] = int64(f.ID())
			lastT, lastSrc = f.Time(), src
			n++
		}
		if n != total {
			rt.Fatalf("merged %d frames of %d", n, total)
		}
	})
}

func sortI64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func TestTimelineSeekTime(t *testing.T) {
	a := memFile(t, []int64{1, 3, 5, 7}, "a")
	b := memFile(t, []int64{2, 4, 6, 8}, "b")
	tl := NewTimeline(a, b)
	if err := tl.SeekTime(4); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for {
		f, _, err := tl.Next()
		if err != nil {
			break
		}
		got = append(got, f.Time())
	}
	if want := []int64{4, 5, 6, 7, 8}; !equalI64(got, want) {
		t.Fatalf("after SeekTime(4): %v, want %v", got, want)
	}
}

func equalI64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
