//go:build !race

package dumpfile

import "testing"

// TestMessagesAllocs: merging pack dumps allocates nothing per message,
// nor when SeekTime restarts the merge.
func TestMessagesAllocs(t *testing.T) {
	times := make([]int64, 200)
	for i := range times {
		times[i] = int64(1 + i/2)
	}
	var sources []*Source
	for i := range 3 {
		s := memDump(t, i, times, false)
		defer s.Close()
		sources = append(sources, s)
	}
	m := NewMessages(sources...)
	step := func() {
		ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if err := m.SeekTime(0); err != nil {
				t.Fatal(err)
			}
			return
		}
		if m.Message().Data == nil {
			t.Fatal("a message without its data")
		}
	}
	for range 700 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("Messages.Next: %v allocs, want 0", n)
	}
}

// TestMessagesDecodeCANAllocs: decoding a dump's CAN frames by DBC
// (SetDBCs) allocates nothing per message once its topics are met.
func TestMessagesDecodeCANAllocs(t *testing.T) {
	path, d := canDump(t)
	SetDBCs(&DBCs{All: d})
	defer SetDBCs(nil)
	src, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := NewMessages(src)
	step := func() {
		ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if err := m.SeekTime(0); err != nil {
				t.Fatal(err)
			}
			return
		}
		if m.Message().Type == nil {
			t.Fatal("a message without its type")
		}
	}
	for range 40 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("Messages.Next decoding CAN frames: %v allocs, want 0", n)
	}
}
