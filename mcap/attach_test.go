package mcap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// attachedFile writes an MCAP file with two attachments (one small, one
// over the staging size, handed to the writer as it is) among its chunks
// and metadata records, two of them sharing a name.
func attachedFile(t testing.TB, comp string) ([]byte, []Attachment) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Options{Compression: comp, ChunkSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i * 31)
	}
	atts := []Attachment{
		{LogTime: 5, CreateTime: 4, Name: "config.toml", MediaType: "application/toml", Data: []byte("[recorder]\n")},
		{LogTime: 1 << 62, Name: "map.bin", Data: big},
	}
	id, err := w.AddTopic(Topic{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := w.WriteMessage(&Message{ChannelID: id, Sequence: uint32(i), LogTime: uint64(100 + i), PublishTime: uint64(100 + i), Data: bytes.Repeat([]byte{byte(i)}, 30)}); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 3:
			if err := w.AddAttachment(&atts[0]); err != nil {
				t.Fatal(err)
			}
		case 20:
			if err := w.AddAttachment(&atts[1]); err != nil {
				t.Fatal(err)
			}
			w.AddMetadata("robot", map[string]string{"name": "r2"})
			w.AddMetadata("robot", map[string]string{"name": "r3", "x": "y"})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), atts
}

func sameAttachments(t *testing.T, what string, got, want []Attachment) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d attachments, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.MediaType != w.MediaType || g.LogTime != w.LogTime || g.CreateTime != w.CreateTime || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: attachment %d = %q %q %d %d (%d bytes), want %q %q %d %d (%d bytes)", what, i,
				g.Name, g.MediaType, g.LogTime, g.CreateTime, len(g.Data), w.Name, w.MediaType, w.LogTime, w.CreateTime, len(w.Data))
		}
	}
}

// TestAttachmentsWritten: attachments the Writer writes read back (Reader
// .Attachments), are counted and indexed in the summary (Doctor finds the
// file conformant), survive Recover, and are read by the reference
// TypeScript reader (indexed and streamed) with the same bytes.
func TestAttachmentsWritten(t *testing.T) {
	var files []string
	dir := t.TempDir()
	for _, comp := range []string{CompressionNone, CompressionZstd} {
		b, want := attachedFile(t, comp)
		r, err := NewReader(b, "att", ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Attachments()
		if err != nil {
			t.Fatal(err)
		}
		sameAttachments(t, "Reader", got, want)
		for _, p := range Doctor("att", b, ReaderOptions{}) {
			t.Errorf("Doctor: %v", p)
		}
		if _, err := r.Verify(); err != nil {
			t.Errorf("Verify: %v", err)
		}
		info, err := r.Info()
		if err != nil || info.Scanned || info.Attachments != 2 {
			t.Errorf("Info: %+v, %v", info, err)
		}
		var out bytes.Buffer
		rep, err := Recover("att", b, &out, RecoverOptions{})
		if err != nil || rep.Attachments != 2 {
			t.Fatalf("Recover: %+v, %v", rep, err)
		}
		rr, _ := NewReader(out.Bytes(), "recovered", ReaderOptions{})
		got, err = rr.Attachments()
		if err != nil {
			t.Fatal(err)
		}
		sameAttachments(t, "Recover", got, want)
		for _, p := range Doctor("recovered", out.Bytes(), ReaderOptions{}) {
			t.Errorf("Doctor of the recovered file: %v", p)
		}
		// A damaged attachment is a lost region of recover, an error of
		// Attachments.
		bad := bytes.Clone(b)
		bad[got[0].Offset+int64(recordPrefixLen+8+8+4+len("config.toml")+4+len("application/toml")+8)] ^= 1
		if _, err := (&Reader{b: bad, name: "bad", dataStart: r.dataStart, hasFooter: r.hasFooter, footerAt: r.footerAt}).Attachments(); err == nil {
			t.Error("a flipped attachment byte read")
		}
		p := filepath.Join(dir, "att-"+comp+".mcap")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if _, err := os.Stat(filepath.Join("testdata", "node", "node_modules", "@mcap", "core")); err != nil {
		return
	}
	res := runNode(t, nodeValidator(t), files...)
	_, want := attachedFile(t, "")
	for _, f := range files {
		r := res[f]
		if r.Error != "" {
			t.Fatalf("%s: @mcap/core: %s", f, r.Error)
		}
		for name, got := range map[string][]nodeAttachment{"indexed": r.Indexed.Attachments, "stream": r.Stream.Attachments} {
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d attachments", filepath.Base(f), name, len(got))
			}
			for i, w := range want {
				sum := sha256.Sum256(w.Data)
				if g := got[i]; g.Name != w.Name || g.MediaType != w.MediaType || g.LogTime != strconv.FormatUint(w.LogTime, 10) ||
					g.Size != len(w.Data) || g.Sha256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s %s: attachment %d = %+v", filepath.Base(f), name, i, g)
				}
			}
		}
		if r.Indexed.Statistics.AttachmentCount != 2 {
			t.Errorf("%s: statistics count %d attachments", filepath.Base(f), r.Indexed.Statistics.AttachmentCount)
		}
	}
}

// TestMetadataSections: MCAP metadata records become pack sections and
// come back as the same records: one record of a name as a JSON object,
// several as an array, a "base64" record as its bytes; bytes that are no
// such JSON stay one base64 record.
func TestMetadataSections(t *testing.T) {
	b, _ := attachedFile(t, "")
	r, _ := NewReader(b, "md", ReaderOptions{})
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	names, data := p.Sections()
	if len(names) != 1 || names[0] != "robot" || string(data[0]) != `[{"name":"r2"},{"name":"r3","x":"y"}]` {
		t.Fatalf("sections %q %q", names, data)
	}
	for _, c := range []struct {
		data string
		want []map[string]string // nil: base64
	}{
		{`{"a":"1"}`, []map[string]string{{"a": "1"}}},
		{`{}`, []map[string]string{{}}},
		{`[{"a":"1"},{}]`, []map[string]string{{"a": "1"}, {}}},
		{`{ "a":"1"}`, nil},
		{`{"b":"1","a":"2"}`, nil}, // not canonical: keys unsorted
		{`[{"a":"1"}]`, nil},       // one record is written as an object
		{`[]`, nil},
		{`[{"a":"1"},null]`, nil},
		{`{"a":1}`, nil},
		{"\x00\x01", nil},
		{``, nil},
	} {
		recs, ok := MetadataRecords([]byte(c.data))
		if ok != (c.want != nil) || ok && !reflect.DeepEqual(recs, c.want) {
			t.Errorf("%q: %v %v, want %v", c.data, recs, ok, c.want)
		}
		var buf bytes.Buffer
		pw, _ := NewPackWriter(&buf, Options{})
		if err := pw.AddMetadata("m", []byte(c.data)); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		rr, _ := NewReader(buf.Bytes(), "m", ReaderOptions{})
		back, err := NewPackReader(rr)
		if err != nil {
			t.Fatal(err)
		}
		if _, data := back.Sections(); len(data) != 1 || string(data[0]) != c.data {
			t.Errorf("%q: read back as %q", c.data, data)
		}
	}
}
