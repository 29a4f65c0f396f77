package mcap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

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
	want := otherMessages(60)
	for _, name := range []string{"unchunked", "chunked-none", "chunked-zstd", "no-statistics"} {
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
			if info.Scanned != (name == "no-statistics") {
				t.Errorf("Scanned = %v", info.Scanned)
			}
			if info.Library != "mcap-ts" || info.Messages != 60 || info.StartTime != 1000 || info.EndTime != 1059 ||
				info.Attachments != 1 || len(info.Channels) != 2 || info.Channels[0].Messages != 30 ||
				info.Channels[1].Messages != 30 || info.Channels[0].Schema == nil || info.Channels[0].Schema.Name != "S" ||
				info.Channels[1].Metadata["k"] != "v" {
				t.Errorf("info %+v", info)
			}
			if len(info.Metadata) != 1 || info.Metadata[0].KV["robot"] != "r2" {
				t.Errorf("metadata %+v", info.Metadata)
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
	if err != nil || len(ents) != 4 {
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
