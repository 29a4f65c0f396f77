package pack

import (
	"bytes"
	"testing"
)

// TestAddSeq: a message added with its producer's sequence number
// (AddSeq) reads back with it; one added without reads back without, and
// its meta has no seq field (a file without sequences is byte for byte
// what it was before the field).
func TestAddSeq(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("a", "", nil, 1, 1, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddSeq("a", "", nil, 2, 2, 0, []byte{2}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddSeq("b", "x", []byte("m"), 3, 3, 1<<40, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("seq", buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := r.ReadInto(&f); err != nil || f.Len() != 3 {
		t.Fatalf("%v, %d messages", err, f.Len())
	}
	for i, want := range []struct {
		has bool
		seq uint64
	}{{false, 0}, {true, 0}, {true, 1 << 40}} {
		if m := f.Message(i); m.HasSeq != want.has || m.Seq != want.seq {
			t.Errorf("message %d: seq %d (%v), want %d (%v)", i, m.Seq, m.HasSeq, want.seq, want.has)
		}
	}
	one := NewFrame(0, 0)
	one.AddMetaWithData("a", "", nil, 1, 1, []byte{1})
	plain := one.AppendMeta(nil)
	one.SetSeq(0, 7)
	if withSeq := one.AppendMeta(nil); len(withSeq) != len(plain)+2 || !bytes.HasSuffix(withSeq, []byte{fieldMsgSeq << 3, 7}) {
		t.Errorf("meta without seq %x, with seq 7 %x: the field is added, nothing else changes", plain, withSeq)
	}
}
