package pack

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// writeAttached writes a small file with two attachments around its frames.
func writeAttached(t testing.TB, w *Writer) {
	t.Helper()
	if err := w.AddAttachment(Attachment{Name: "config.toml", MediaType: "application/toml", LogNs: 5, CreateNs: 4, Data: []byte("[recorder]\n")}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Add("a", "", nil, int64(10+i), int64(10+i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.AddAttachment(Attachment{Name: "empty", Data: nil, LogNs: -1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("a", "", nil, 20, 20, []byte{9}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func checkAttachments(t *testing.T, what string, got []Attachment, withData bool) {
	t.Helper()
	if len(got) != 2 {
		t.Fatalf("%s: %d attachments", what, len(got))
	}
	a, b := got[0], got[1]
	if a.Name != "config.toml" || a.MediaType != "application/toml" || a.LogNs != 5 || a.CreateNs != 4 || a.Size != 11 ||
		withData && string(a.Data) != "[recorder]\n" || !withData && a.Data != nil || a.Offset != HeaderSize {
		t.Errorf("%s: first %+v", what, a)
	}
	if b.Name != "empty" || b.MediaType != "" || b.LogNs != -1 || b.Size != 0 || len(b.Data) != 0 {
		t.Errorf("%s: second %+v", what, b)
	}
}

// TestAttachments: attachments written with AddAttachment read back from
// a Reader (with their bytes) and a StreamReader (without), verify,
// recover, and do not disturb the frames.
func TestAttachments(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t"})
	if err != nil {
		t.Fatal(err)
	}
	writeAttached(t, w)
	file := buf.Bytes()
	r, err := NewBytesReader("att", file, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as, err := r.Attachments()
	if err != nil {
		t.Fatal(err)
	}
	checkAttachments(t, "Reader", as, true)
	n := 0
	var f Frame
	for {
		err := r.ReadInto(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += f.Len()
	}
	if n != 4 {
		t.Errorf("%d messages", n)
	}
	sr, err := NewStreamReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if err := sr.ReadInto(&f); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	checkAttachments(t, "StreamReader", sr.Attachments(), false)
	if v := VerifyBytes("att", file); !v.OK() || v.Attachments != 2 || !v.Complete {
		t.Errorf("verify: %+v", v)
	}
	// Recover keeps them (the file cut before its index).
	var out bytes.Buffer
	rep, err := RecoverTo("att", file[:len(file)-TrailerSize-1], func(o WriterOptions) (*Writer, error) { return NewStreamWriter(&out, o) })
	if err != nil || rep.Attachments != 2 || rep.Messages != 4 {
		t.Fatalf("recover: %+v, %v", rep, err)
	}
	rr, err := NewBytesReader("recovered", out.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as, err = rr.Attachments()
	if err != nil || len(as) != 2 || string(as[0].Data) != "[recorder]\n" {
		t.Errorf("recovered: %+v, %v", as, err)
	}
	// A file written by Create reads the same.
	p := filepath.Join(t.TempDir(), "att.pack")
	fw, err := Create(p, WriterOptions{Writer: "t"})
	if err != nil {
		t.Fatal(err)
	}
	writeAttached(t, fw)
	fr, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	as, err = fr.Attachments()
	if err != nil {
		t.Fatal(err)
	}
	checkAttachments(t, "Create", as, true)
}

// TestAttachmentDamage: an attachment section whose fields do not decode
// (its CRC intact) is a problem verify names with its offset, and an error
// of Attachments; the limits on names are the writer's too.
func TestAttachmentDamage(t *testing.T) {
	head := appendAttachmentHead(nil, &Attachment{Name: "x", LogNs: 1})
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"no varint", []byte{0x80}},
		{"name past the end", append(appendAttachmentHead(nil, &Attachment{}), 0x7f)[:3]},
		{"name too long", func() []byte {
			b := []byte{2, 2}
			b = append(b, 0x81, 0x40) // 8193
			return append(b, make([]byte, 8193)...)
		}()},
	} {
		var buf bytes.Buffer
		w, _ := NewStreamWriter(&buf, WriterOptions{})
		if _, err := w.writeSection(SectionAttachment, c.payload); err != nil {
			t.Fatal(err)
		}
		w.Close()
		v := VerifyBytes("bad", buf.Bytes())
		if v.OK() || len(v.Problems) != 1 || v.Problems[0].Offset < HeaderSize {
			t.Errorf("%s: verify %+v", c.name, v.Problems)
		}
		r, _ := NewBytesReader("bad", buf.Bytes(), ReaderOptions{})
		if _, err := r.Attachments(); err == nil {
			t.Errorf("%s: Attachments read it", c.name)
		}
	}
	if _, err := parseAttachmentPayload("ok", 0, head); err != nil {
		t.Errorf("a section with no data: %v", err)
	}
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{})
	if err := w.AddAttachment(Attachment{Name: string(make([]byte, MaxAttachmentName+1))}); err == nil {
		t.Error("a name over MaxAttachmentName was written")
	}
}

// TestAttachmentsMemoryLimit: listing attachments is charged against the
// reader's memory limit (1 KiB each beyond their names), so a file of tiny
// attachment sections cannot make a list many times its size: over the
// limit is ErrMemoryLimit at the section that passed it.
func TestAttachmentsMemoryLimit(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{})
	for range 10 {
		if err := w.AddAttachment(Attachment{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	r, err := NewBytesReader("many", buf.Bytes(), ReaderOptions{MaxMemory: 5 << 10})
	if err != nil {
		t.Fatal(err)
	}
	as, err := r.Attachments()
	if !errors.Is(err, ErrMemoryLimit) || len(as) != 4 {
		t.Errorf("%d attachments, %v", len(as), err)
	}
	r, _ = NewBytesReader("many", buf.Bytes(), ReaderOptions{})
	if as, err := r.Attachments(); err != nil || len(as) != 10 {
		t.Errorf("default limit: %d attachments, %v", len(as), err)
	}
}
