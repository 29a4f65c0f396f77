package dumpfile

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/edr-lite/edr-lite/ingest"
)

// A pack dump read from a stream gives the same summary and the same
// messages as the file.
func TestStreamLikeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.pack")
	writeRichPack(t, path, 1_000_000, "brake")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadInfoFrom("-", iotest.HalfReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	want.Path = "-"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadInfoFrom:\n got %+v\nwant %+v", got, want)
	}
	var wantMsgs, gotMsgs []Msg
	collect := func(out *[]Msg) func(m *Msg) error {
		return func(m *Msg) error {
			c := *m
			c.Data = bytes.Clone(m.Data)
			// The file is untyped (pack 1.0 style): a file names the
			// raw types from its dump information, which a stream has
			// only at its end.
			if c.Type == nil || c.Type.MessageEncoding != ingest.EncodingRaw {
				t.Errorf("message type %v, want raw", c.Type)
			}
			c.Type = nil
			*out = append(*out, c)
			return nil
		}
	}
	if err := Walk(path, collect(&wantMsgs)); err != nil {
		t.Fatal(err)
	}
	if err := WalkFrom("-", bytes.NewReader(b), collect(&gotMsgs)); err != nil {
		t.Fatal(err)
	}
	if len(wantMsgs) != 60 || !reflect.DeepEqual(gotMsgs, wantMsgs) {
		t.Errorf("WalkFrom gave %d messages, Walk %d (or they differ)", len(gotMsgs), len(wantMsgs))
	}
	// damage: the error names the stream and the offset
	b[len(b)/3] ^= 0xff
	err = WalkFrom("-", bytes.NewReader(b), func(*Msg) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "offset") {
		t.Errorf("damaged stream: %v", err)
	}
	mc := exportToMCAP(t, path, "")
	mb, _ := os.ReadFile(mc)
	if _, err := ReadInfoFrom("-", bytes.NewReader(mb)); err == nil || !strings.Contains(err.Error(), "MCAP") {
		t.Errorf("MCAP on a stream: %v", err)
	}
}
