package mcap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// otherFiles are the files testdata/node/write.mjs writes; extra: with a
// second attachment and metadata record, and sequences 3 * i.
var otherFiles = []struct {
	name           string
	extra, scanned bool
}{
	{"unchunked", false, false}, {"chunked-none", false, false}, {"chunked-zstd", false, false}, {"no-statistics", false, true},
	{"no-summary", true, true}, {"unchunked-no-summary", true, true}, {"chunked-extra", true, false},
}

// otherMessages recomputes the messages testdata/node/write.mjs writes.
func otherMessages(n int) []sent {
	var out []sent
	for i := range n {
		data := make([]byte, (i*13)%500)
		for j := range data {
			data[j] = byte((i*7 + j) % 256)
		}
		topic := "/a"
		if i%2 == 1 {
			topic = "/b"
		}
		out = append(out, sent{topic, Message{Sequence: uint32(i), LogTime: uint64(1000 + i), PublishTime: uint64(500 + i), Data: data}})
	}
	return out
}

// TestReadOtherWriters reads files written by the reference TypeScript
// writer (testdata/other, made by `node testdata/node/write.mjs
// testdata/other 60`): unchunked, chunked, zstd, and without statistics or
// chunk indexes, each with an attachment and a metadata record.
func TestReadOtherWriters(t *testing.T) {
	for _, f := range otherFiles {
		name := f.name
		want := otherMessages(60)
		if f.extra {
			for i := range want {
				want[i].m.Sequence *= 3
			}
		}
		t.Run(name, func(t *testing.T) {
			r, err := Open(filepath.Join("testdata", "other", name+".mcap"), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []sent
			err = r.Messages(func(c *Channel, m *Message) error {
				got = append(got, sent{c.Topic, Message{Sequence: m.Sequence, LogTime: m.LogTime,
					PublishTime: m.PublishTime, Data: bytes.Clone(m.Data)}})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i].m.ChannelID = 0 // ids are the other writer's business
			}
			sameMessages(t, got, want)
			info, err := r.Info()
			if err != nil {
				t.Fatal(err)
			}
			if info.Scanned != f.scanned {
				t.Errorf("Scanned = %v", info.Scanned)
			}
			atts, mds := 1, 1
			if f.extra {
				atts, mds = 2, 2
			}
			if info.Library != "mcap-ts" || info.Messages != 60 || info.StartTime != 1000 || info.EndTime != 1059 ||
				info.Attachments != atts || len(info.Channels) != 2 || info.Channels[0].Messages != 30 ||
				info.Channels[1].Messages != 30 || info.Channels[0].Schema == nil || info.Channels[0].Schema.Name != "S" ||
				info.Channels[1].Metadata["k"] != "v" {
				t.Errorf("info %+v", info)
			}
			if len(info.Metadata) != mds || info.Metadata[0].KV["robot"] != "r2" || f.extra && info.Metadata[1].KV["site"] != "lab" {
				t.Errorf("metadata %+v", info.Metadata)
			}
			as, err := r.Attachments()
			if err != nil || len(as) != atts || as[0].Name != "calib.txt" || string(as[0].Data) != "\x01\x02\x03" {
				t.Fatalf("attachments %+v, %v", as, err)
			}
			if f.extra {
				if a := as[1]; a.Name != "map.bin" || a.MediaType != "application/octet-stream" || a.LogTime != 1030 ||
					a.CreateTime != 7 || len(a.Data) != 70000 || a.Data[69999] != byte(69999*13%251) {
					t.Errorf("second attachment %q %q %d %d %d bytes", a.Name, a.MediaType, a.LogTime, a.CreateTime, len(a.Data))
				}
			}
		})
	}
}

// TestNodeWriterUpToDate regenerates testdata/other with the reference
// writer and checks the committed files are what it writes today.
func TestNodeWriterUpToDate(t *testing.T) {
	dir := nodeValidator(t)
	tmp := t.TempDir()
	runNodeScript(t, dir, "write.mjs", tmp, "60")
	ents, err := os.ReadDir(tmp)
	if err != nil || len(ents) != len(otherFiles) {
		t.Fatalf("write.mjs made %v, %v", ents, err)
	}
	for _, e := range ents {
		got, _ := os.ReadFile(filepath.Join(tmp, e.Name()))
		want, err := os.ReadFile(filepath.Join("testdata", "other", e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from testdata/other (regenerate with node testdata/node/write.mjs testdata/other 60): %v", e.Name(), err)
		}
	}
}
