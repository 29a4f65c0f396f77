package pack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

func packedT(name, layout string) ingest.Type {
	return ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaLayout, Data: []byte(layout)}}
}

// writeTyped writes, through Add: a and b share type A from the start; a
// changes to B after two messages (inside what would be one frame); a is
// set to B again (nothing written); c is left undeclared.
func writeTyped(t *testing.T, w *Writer) {
	t.Helper()
	A, B := packedT("v.A", "u8 a"), packedT("v.B", "u16le b")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.SetTopicType("a", "", A, 100))
	must(w.SetTopicType("b", "ch", A, 100))
	must(w.Add("a", "", nil, 100, 100, []byte{1}))
	must(w.Add("b", "ch", nil, 101, 101, []byte{2}))
	must(w.Add("a", "", nil, 102, 102, []byte{3}))
	must(w.SetTopicType("a", "", B, 103))
	must(w.SetTopicType("a", "", B, 104))
	must(w.Add("a", "", nil, 103, 103, []byte{4, 0}))
	must(w.Add("c", "", nil, 104, 104, []byte{5}))
	must(w.Close())
}

// messageTypes reads every message in file order with the type the file
// gives it ("-" for none): "a=v.A a=v.A ...".
func messageTypes(t *testing.T, r *Reader) string {
	t.Helper()
	ts, err := r.Types()
	if err != nil {
		t.Fatal(err)
	}
	x := NewTypeIndex(ts)
	var out []string
	var f Frame
	for {
		if err := r.ReadInto(&f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for i := range f.Len() {
			m := f.Message(i)
			name := "-"
			if tt := x.At(m.Name, m.Channel, r.FrameOffset()); tt != nil {
				name = tt.Type.Schema.Name
			}
			out = append(out, m.Name+"="+name)
		}
	}
	return strings.Join(out, " ")
}

const wantTyped = "a=v.A b=v.A a=v.A a=v.B c=-"

// TestTopicTypesRoundTrip: types written with SetTopicType come back per
// message, a change mid-frame applies from the next message, a type
// shared by two topics is stored once, the same type twice writes one
// section; a stream reader sees the same.
func TestTopicTypesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typed.pack")
	w, err := Create(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeTyped(t, w)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := messageTypes(t, r); got != wantTyped {
		t.Errorf("messages and types: %s, want %s", got, wantTyped)
	}
	ts, _ := r.Types()
	if len(ts) != 3 {
		t.Fatalf("%d type sections, want 3 (a=A, b=A by reference, a=B)", len(ts))
	}
	if ts[2].FromNs != 103 || !ts[1].Type.Equal(ts[0].Type) {
		t.Errorf("sections %+v", ts)
	}
	b, _ := readFile(t, path)
	if n := bytes.Count(b, []byte("u8 a")); n != 1 {
		t.Errorf("type A's layout stored %d times, want once", n)
	}
	rep := VerifyBytes(path, b)
	if !rep.OK() || rep.Types != 3 {
		t.Errorf("verify: %+v", rep)
	}

	// The same file through a stream: types as they pass.
	s, err := NewStreamReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	var got []string
	for {
		err := s.ReadInto(&f)
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		x := NewTypeIndex(s.Types())
		for i := range f.Len() {
			m := f.Message(i)
			name := "-"
			if tt := x.At(m.Name, m.Channel, s.FrameOffset()); tt != nil {
				name = tt.Type.Schema.Name
			}
			got = append(got, m.Name+"="+name)
		}
	}
	if strings.Join(got, " ") != wantTyped {
		t.Errorf("stream: %s, want %s", strings.Join(got, " "), wantTyped)
	}

	// Recover keeps them, also from a file cut before its index.
	out := filepath.Join(t.TempDir(), "rec.pack")
	if _, err := RecoverTo(path, b[:len(b)-40], func(o WriterOptions) (*Writer, error) { return Create(out, o) }); err != nil {
		t.Fatal(err)
	}
	rr, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if got := messageTypes(t, rr); got != wantTyped {
		t.Errorf("recovered: %s, want %s", got, wantTyped)
	}
}

func readFile(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return bytes.Clone(r.data), nil
}

// TestSetTopicTypeRefusesInvalid: a malformed type is refused and the
// writer goes on.
func TestSetTopicTypeRefusesInvalid(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{})
	err := w.SetTopicType("a", "", ingest.Type{MessageEncoding: ingest.EncodingProtobuf}, 0)
	if !errors.Is(err, ingest.ErrInvalidType) || !strings.Contains(err.Error(), "topic a#") {
		t.Errorf("SetTopicType(protobuf without schema) = %v", err)
	}
	if err := w.Add("a", "", nil, 1, 1, []byte{1}); err != nil {
		t.Errorf("Add after a refused type: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

// typeSection builds a type section record with payload p.
func typeSection(p []byte) []byte {
	rec := make([]byte, SectionHeaderSize+len(p))
	copy(rec[SectionHeaderSize:], p)
	putSectionHeader(rec, SectionType, p)
	return rec
}

// TestHostileTypeSections: a type section whose CRC holds but whose
// content lies is a *CorruptError naming the file, the offset and the
// field, from Types, the stream reader and verify; a valid file around it
// still reads its frames.
func TestHostileTypeSections(t *testing.T) {
	good := packedT("v.A", "u8 a")
	id := good.ID()
	body := appendTypePayload(nil, "a", "", 1, &good, id, true)
	lie := func(mut func(p []byte) []byte) []byte { return mut(bytes.Clone(body)) }
	cases := []struct {
		name, field string
		payload     []byte
	}{
		{"name length past the end", "topic name", []byte{0x7f, 'a'}},
		{"no id", "type id", []byte{1, 'a', 0, 2, 1, 2, 3}},
		{"bad form", "form", append(appendTypePayload(nil, "a", "", 0, nil, id, false)[:1+1+1+1+16], 7)},
		{"unknown reference", "type id", appendTypePayload(nil, "a", "", 0, nil, id, false)},
		{"body does not hash to its id", "type id", lie(func(p []byte) []byte { p[len(p)-1] = 'b'; return p })},
		{"invalid type", "type", func() []byte {
			bad := ingest.Type{MessageEncoding: ingest.EncodingProtobuf, Schema: ingest.Schema{Name: "a.B", Encoding: ingest.SchemaProtobuf}}
			return appendTypePayload(nil, "a", "", 0, &bad, bad.ID(), true)
		}()},
		{"huge schema name claim", "schema name", func() []byte {
			p := appendTypePayload(nil, "a", "", 0, nil, id, false)
			p[len(p)-1] = typeBody
			p = binary.AppendUvarint(p, 3)
			p = append(p, "abc"...)
			return binary.AppendUvarint(p, 100<<20)
		}()},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		w, _ := NewStreamWriter(&buf, WriterOptions{})
		w.Add("a", "", nil, 1, 1, []byte{1})
		w.Flush()
		off := w.Offset()
		buf.Write(typeSection(c.payload)) // behind the writer's back: its offsets shift, no index
		file := buf.Bytes()
		r, err := NewBytesReader("hostile.pack", file, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Types()
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != "hostile.pack" || ce.Offset < off || ce.Offset >= int64(len(file)) ||
			!strings.Contains(ce.Reason, c.field) {
			t.Errorf("%s: Types() = %v, want a CorruptError naming the file, an offset in the section and %q", c.name, err, c.field)
		}
		var f Frame
		if err := r.ReadInto(&f); err != nil || f.Len() != 1 {
			t.Errorf("%s: the frame before it: %v", c.name, err)
		}
		r.Close()
		rep := VerifyBytes("hostile.pack", file)
		if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Reason, c.field) {
			t.Errorf("%s: verify problems %v", c.name, rep.Problems)
		}
		s, _ := NewStreamReader(bytes.NewReader(file))
		for err = nil; err == nil; {
			err = s.ReadInto(&f)
		}
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, c.field) {
			t.Errorf("%s: stream: %v", c.name, err)
		}
	}
}
