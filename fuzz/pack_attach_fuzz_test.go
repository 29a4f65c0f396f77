package fuzz

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/edr-lite/edr-lite/pack"
)

// attachSeed is a small pack file with attachment sections before, between
// and after its frames.
func attachSeed() []byte {
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{Writer: "seed", CreatedNs: 1})
	if err != nil {
		panic(err)
	}
	add := func(a pack.Attachment) {
		if err := w.AddAttachment(a); err != nil {
			panic(err)
		}
	}
	add(pack.Attachment{Name: "config.toml", MediaType: "application/toml", LogNs: 1, CreateNs: 2, Data: []byte("[recorder]\nname = \"x\"\n")})
	for i := range 3 {
		w.Add("a", "", nil, int64(10+i), int64(10+i), []byte{byte(i), 1, 2})
		if i == 1 {
			w.Flush()
			add(pack.Attachment{Name: "map", Data: bytes.Repeat([]byte{7}, 300), LogNs: -5})
		}
	}
	w.Flush()
	add(pack.Attachment{})
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// FuzzPackAttachments feeds hostile files to the readers of attachment
// sections (pack/attach.go): Reader.Attachments, the StreamReader, Verify
// and Recover. Properties: no panic; errors are *CorruptError; an
// attachment's bytes lie inside the file; a file Verify passes gives every
// attachment it counted to both readers, and Recover keeps them all.
func FuzzPackAttachments(f *testing.F) {
	good := attachSeed()
	f.Add(good)
	f.Add(good[:len(good)/2])
	flipped := bytes.Clone(good)
	flipped[pack.HeaderSize+pack.SectionHeaderSize+1] ^= 0x40 // inside the first attachment's fields
	f.Add(flipped)
	addPackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := pack.VerifyBytes("fuzz.pack", data)
		r, err := pack.NewBytesReader("fuzz.pack", data, pack.ReaderOptions{})
		if err != nil {
			return
		}
		defer r.Close()
		as, err := r.Attachments()
		if err != nil {
			var ce *pack.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Attachments error %T %v is not a *CorruptError", err, err)
			}
			if v.OK() {
				t.Fatalf("Attachments fails (%v) but Verify finds no problem", err)
			}
		}
		for _, a := range as {
			if a.Size != int64(len(a.Data)) || a.Offset < pack.HeaderSize || a.Offset+int64(len(a.Data)) > int64(len(data)) {
				t.Fatalf("attachment %q: %d bytes (size %d) at %d of a %d-byte file", a.Name, len(a.Data), a.Size, a.Offset, len(data))
			}
		}
		if v.OK() && err == nil && len(as) != v.Attachments {
			t.Fatalf("Attachments found %d, Verify %d", len(as), v.Attachments)
		}
		sr, err := pack.NewStreamReader(bytes.NewReader(data))
		if err == nil {
			var fr pack.Frame
			var serr error
			for serr == nil {
				serr = sr.ReadMetaInto(&fr)
			}
			if v.OK() && v.Complete && errors.Is(serr, io.EOF) && len(sr.Attachments()) != v.Attachments {
				t.Fatalf("StreamReader found %d attachments, Verify %d", len(sr.Attachments()), v.Attachments)
			}
		}
		var out bytes.Buffer
		rep, err := pack.RecoverTo("fuzz.pack", data, func(o pack.WriterOptions) (*pack.Writer, error) { return pack.NewStreamWriter(&out, o) })
		if err == nil && v.OK() && rep.Attachments != v.Attachments {
			t.Fatalf("Recover kept %d attachments, Verify counted %d", rep.Attachments, v.Attachments)
		}
	})
}
