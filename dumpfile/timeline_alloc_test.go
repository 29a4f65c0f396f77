//go:build !race

package dumpfile

import (
	"io"
	"testing"
)

// TestIteratorAllocs: a Timeline's Iterator with a topic and time filter
// allocates nothing per message, nor when SeekTime starts it over.
func TestIteratorAllocs(t *testing.T) {
	times := make([]int64, 200)
	for i := range times {
		times[i] = int64(1 + i/2)
	}
	var sources []*Source
	for i := range 3 {
		s := memDump(t, i, times, i == 2)
		defer s.Close()
		sources = append(sources, s)
	}
	it, err := NewTimeline(sources...).Messages(WithTopics("*"), WithoutTopics("none"), From(2), To(90))
	if err != nil {
		t.Fatal(err)
	}
	step := func() {
		m, err := it.Next()
		if err == io.EOF {
			if err := it.SeekTime(0); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Data == nil {
			t.Fatal("a message without its data")
		}
	}
	for range 700 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("Iterator.Next: %v allocs, want 0", n)
	}
}
