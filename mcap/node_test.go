package mcap

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edr-lite/edr-lite/pack"
)

// nodeResult mirrors what testdata/node/validate.mjs prints per file.
type nodeResult struct {
	Error string `json:"error"`
	// NotIndexed: the file has no summary, so the indexed reader does not
	// read it (Indexed is empty); the stream reader does.
	NotIndexed bool `json:"notIndexed"`
	Indexed    struct {
		Profile  string               `json:"profile"`
		Library  string               `json:"library"`
		Topics   map[string]topicStat `json:"topics"`
		Metadata []struct {
			Name string
			KV   map[string]string
		} `json:"metadata"`
		Attachments []nodeAttachment  `json:"attachments"`
		Chunks      []string          `json:"chunks"`
		Schemas     map[string]string `json:"schemas"`
		Channels    []nodeChannel     `json:"channels"`
		JSON        map[string]struct {
			OK  int `json:"ok"`
			Bad int `json:"bad"`
		} `json:"json"`
		Statistics struct {
			MessageCount     int    `json:"messageCount"`
			ChannelCount     int    `json:"channelCount"`
			ChunkCount       int    `json:"chunkCount"`
			MetadataCount    int    `json:"metadataCount"`
			AttachmentCount  int    `json:"attachmentCount"`
			MessageStartTime string `json:"messageStartTime"`
			MessageEndTime   string `json:"messageEndTime"`
		} `json:"statistics"`
		DataSectionCrcOk bool `json:"dataSectionCrcOk"`
	} `json:"indexed"`
	Stream struct {
		Topics   map[string]topicStat `json:"topics"`
		Records  map[string]int       `json:"records"`
		Metadata []struct {
			Name string
			KV   map[string]string
		} `json:"metadata"`
		Attachments []nodeAttachment `json:"attachments"`
	} `json:"stream"`
}

// nodeAttachment is an Attachment record as @mcap/core read it.
type nodeAttachment struct {
	Name       string `json:"name"`
	MediaType  string `json:"mediaType"`
	LogTime    string `json:"logTime"`
	CreateTime string `json:"createTime"`
	Size       int    `json:"size"`
	Sha256     string `json:"sha256"`
}

// nodeChannel is a channel as @mcap/core read it.
type nodeChannel struct {
	Topic           string `json:"topic"`
	MessageEncoding string `json:"messageEncoding"`
	SchemaID        int    `json:"schemaId"`
	Schema          *struct {
		Name     string `json:"name"`
		Encoding string `json:"encoding"`
		Sha256   string `json:"sha256"`
	} `json:"schema"`
	Metadata map[string]string `json:"metadata"`
}

type topicStat struct {
	Messages int    `json:"messages"`
	Bytes    int    `json:"bytes"`
	Sha256   string `json:"sha256"`
	Seqs     string `json:"seqs,omitempty"` // stream reader: the sequence numbers in order, comma-separated
}

// noSeqs is s without its sequence numbers.
func (s topicStat) noSeqs() topicStat {
	s.Seqs = ""
	return s
}

// nodeValidator returns the directory of validate.mjs, or skips the test
// when node or the npm packages are missing.
func nodeValidator(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("needs node for the @mcap/core reference reader: %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@mcap", "core")); err != nil {
		t.Skipf("needs `npm ci` in %s (the @mcap/core reference reader): %v", dir, err)
	}
	return dir
}

func runNodeScript(t *testing.T, dir, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	return out
}

func runNode(t *testing.T, dir string, files ...string) map[string]nodeResult {
	t.Helper()
	out := runNodeScript(t, dir, "validate.mjs", files...)
	res := map[string]nodeResult{}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	return res
}

// wantTopics computes per-topic count, bytes and SHA-256 of the payloads in
// order, as validate.mjs does.
func wantTopics(msgs []sent) map[string]topicStat {
	hashes := map[string][]byte{}
	out := map[string]topicStat{}
	for _, m := range msgs {
		s := out[m.topic]
		s.Messages++
		s.Bytes += len(m.m.Data)
		out[m.topic] = s
		hashes[m.topic] = append(hashes[m.topic], m.m.Data...)
	}
	for k, s := range out {
		sum := sha256.Sum256(hashes[k])
		s.Sha256 = hex.EncodeToString(sum[:])
		out[k] = s
	}
	return out
}

// TestNodeReader reads our files with the reference TypeScript reader, both
// indexed (summary, chunk indexes, message indexes, summary CRC) and
// streaming (every record, chunk CRCs), for each compression, and checks
// per-topic message counts, bytes and payload hashes, metadata and
// statistics against what was written.
func TestNodeReader(t *testing.T) {
	dir := nodeValidator(t)
	msgs := testMessages(2000)
	want := wantTopics(msgs)
	tmp := t.TempDir()
	type tc struct {
		path string
		opt  Options
	}
	var cases []tc
	for _, comp := range compressions {
		for _, chunk := range []int{16 << 10, 4 << 20} {
			cases = append(cases, tc{filepath.Join(tmp, fmt.Sprintf("c%s-%d.mcap", comp, chunk)),
				Options{Compression: comp, ChunkSize: chunk, Profile: "x-edr"}})
		}
	}
	var files []string
	for _, c := range cases {
		fw, err := Create(c.path, FileOptions{Options: c.opt, Window: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		writeTest(t, fw.Writer, msgs)
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, c.path)
	}
	res := runNode(t, dir, files...)
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			r, ok := res[c.path]
			if !ok || r.Error != "" {
				t.Fatalf("@mcap/core failed: %s", r.Error)
			}
			ix := r.Indexed
			for name, got := range map[string]map[string]topicStat{"indexed": ix.Topics, "stream": r.Stream.Topics} {
				if len(got) != len(want) {
					t.Errorf("%s: %d topics, want %d", name, len(got), len(want))
				}
				for k, w := range want {
					if got[k].noSeqs() != w {
						t.Errorf("%s: topic %q: got %+v, want %+v", name, k, got[k], w)
					}
				}
			}
			if ix.Profile != "x-edr" || ix.Library != DefaultLibrary || !ix.DataSectionCrcOk {
				t.Errorf("header %q %q, data CRC ok %v", ix.Profile, ix.Library, ix.DataSectionCrcOk)
			}
			if len(ix.Metadata) != 1 || ix.Metadata[0].Name != "edr.trigger" || ix.Metadata[0].KV["reason"] != "hard-brake" {
				t.Errorf("metadata %+v", ix.Metadata)
			}
			st := ix.Statistics
			if st.MessageCount != len(msgs) || st.ChannelCount != len(testTopics) || st.ChunkCount != len(ix.Chunks) ||
				st.MetadataCount != 1 || st.MessageStartTime != strconv.FormatUint(msgs[0].m.LogTime, 10) ||
				st.MessageEndTime != strconv.FormatUint(msgs[len(msgs)-1].m.LogTime, 10) {
				t.Errorf("statistics %+v", st)
			}
			for _, comp := range ix.Chunks {
				if comp != c.opt.Compression {
					t.Errorf("chunk compression %q, want %q", comp, c.opt.Compression)
				}
			}
			if r.Stream.Records["ChunkIndex"] != len(ix.Chunks) || r.Stream.Records["MessageIndex"] == 0 ||
				r.Stream.Records["DataEnd"] != 1 || r.Stream.Records["SummaryOffset"] == 0 {
				t.Errorf("records seen by the stream reader: %v", r.Stream.Records)
			}
			for _, tp := range testTopics {
				if got := ix.Schemas[TopicName(tp.Name, tp.Channel)]; got != tp.Type.Schema.Name {
					t.Errorf("topic %q schema %q, want %q", tp.Name, got, tp.Type.Schema.Name)
				}
			}
		})
	}
}

// TestNodeReadsExport: a pack dump exported to MCAP (each compression) and a
// dump written directly as MCAP read back in @mcap/core with identical
// messages per topic, and the trigger in the metadata.
func TestNodeReadsExport(t *testing.T) {
	dir := nodeValidator(t)
	msgs := packMessages(600)
	want := wantTopics(wantExport(msgs))
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in.pack")
	writePack(t, in, msgs, pack.CompressLZ4)
	var files []string
	for _, comp := range compressions {
		out := filepath.Join(tmp, fmt.Sprintf("export-%s.mcap", comp))
		exportFile(t, in, out, Options{Compression: comp, ChunkSize: 32 << 10})
		files = append(files, out)
	}
	direct := filepath.Join(tmp, "direct.mcap")
	pw, err := CreatePackWriter(direct, FileOptions{Options: Options{Compression: CompressionZstd}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := pw.Add(m.name, m.channel, m.meta, m.gen, m.done, m.data); err != nil {
			t.Fatal(err)
		}
	}
	_ = pw.SetDumpInfo(testDumpInfo)
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	files = append(files, direct)
	res := runNode(t, dir, files...)
	for _, f := range files {
		r := res[f]
		if r.Error != "" {
			t.Fatalf("%s: @mcap/core failed: %s", filepath.Base(f), r.Error)
		}
		for name, got := range map[string]map[string]topicStat{"indexed": r.Indexed.Topics, "stream": r.Stream.Topics} {
			if len(got) != len(want) {
				t.Errorf("%s %s: %d topics, want %d", filepath.Base(f), name, len(got), len(want))
			}
			for k, w := range want {
				if got[k].noSeqs() != w {
					t.Errorf("%s %s: topic %q: got %+v, want %+v", filepath.Base(f), name, k, got[k], w)
				}
			}
		}
		found := false
		for _, md := range r.Indexed.Metadata {
			found = found || (md.Name == MetadataTrigger && md.KV["reason"] == "hard-brake")
		}
		if !found || !r.Indexed.DataSectionCrcOk {
			t.Errorf("%s: trigger metadata found %v, data CRC ok %v", filepath.Base(f), found, r.Indexed.DataSectionCrcOk)
		}
	}
}

// TestNodeReadsDemoExport: two simulated seconds of the demo vehicle
// (speed, brake, IMU, 200 KB camera frames) recorded as a pack dump,
// exported to MCAP with each compression, read by @mcap/core with the
// same messages per topic.
func TestNodeReadsDemoExport(t *testing.T) {
	dir := nodeValidator(t)
	topics, msgs, _ := benchWorkload(false)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "demo.pack")
	w, err := pack.Create(in, pack.WriterOptions{Writer: "demo", Compression: pack.CompressLZ4})
	if err != nil {
		t.Fatal(err)
	}
	var want []sent
	for _, m := range msgs {
		tp := topics[m.ChannelID]
		if err := w.Add(tp.Name, "", nil, int64(m.PublishTime), int64(m.LogTime), m.Data); err != nil {
			t.Fatal(err)
		}
		want = append(want, sent{tp.Name, m})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, comp := range compressions {
		out := filepath.Join(tmp, fmt.Sprintf("demo-%s.mcap", comp))
		exportFile(t, in, out, Options{Compression: comp})
		files = append(files, out)
	}
	res := runNode(t, dir, files...)
	wt := wantTopics(want)
	for _, f := range files {
		r := res[f]
		if r.Error != "" {
			t.Fatalf("%s: @mcap/core failed: %s", filepath.Base(f), r.Error)
		}
		if len(r.Indexed.Topics) != len(wt) || len(r.Stream.Topics) != len(wt) {
			t.Errorf("%s: topics %v / %v", filepath.Base(f), r.Indexed.Topics, r.Stream.Topics)
		}
		for k, w := range wt {
			if r.Indexed.Topics[k] != w || r.Stream.Topics[k].noSeqs() != w {
				t.Errorf("%s: topic %q: indexed %+v stream %+v, want %+v", filepath.Base(f), k, r.Indexed.Topics[k], r.Stream.Topics[k], w)
			}
		}
	}
}

// TestNodeReadsTypedExport: a typed pack dump exported to MCAP (packed
// structs transcoded, and kept with KeepPacked) reads in @mcap/core with a
// Schema record of the right encoding behind every typed channel (the
// protobuf descriptor set byte for byte), and every message of a json
// channel parses with JSON.parse.
func TestNodeReadsTypedExport(t *testing.T) {
	dir := nodeValidator(t)
	msgs := typedMessages(60)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "typed.pack")
	writeTypedPack(t, in, msgs)
	transcoded, kept := filepath.Join(tmp, "typed.mcap"), filepath.Join(tmp, "kept.mcap")
	exportFile(t, in, transcoded, Options{Compression: CompressionZstd})
	exportFile(t, in, kept, Options{KeepPacked: true})
	res := runNode(t, dir, transcoded, kept)
	sum := sha256.Sum256(typStamp.Schema.Data)
	stampSHA := hex.EncodeToString(sum[:])
	for _, f := range []string{transcoded, kept} {
		r := res[f]
		if r.Error != "" {
			t.Fatalf("%s: @mcap/core failed: %s", filepath.Base(f), r.Error)
		}
		packed := "json"
		if f == kept {
			packed = "x-edr-packed"
		}
		want := map[string][2]string{ // message encoding, schema encoding
			"vehicle/speed": {packed, map[string]string{"json": "jsonschema", "x-edr-packed": "x-edr-layout"}[packed]},
			"clock":         {"protobuf", "protobuf"},
			"calibration":   {"json", "jsonschema"},
			"blob":          {"x-edr-raw", ""},
		}
		seen := map[string]int{}
		for _, c := range r.Indexed.Channels {
			w, ok := want[c.Topic]
			if !ok || c.Schema == nil || c.MessageEncoding != w[0] || c.Schema.Encoding != w[1] || c.SchemaID == 0 {
				t.Errorf("%s: channel %+v (schema %+v), want encodings %v", filepath.Base(f), c, c.Schema, w)
				continue
			}
			seen[c.Topic]++
			if c.Topic == "clock" && c.Schema.Sha256 != stampSHA {
				t.Errorf("%s: the protobuf Schema record is not the descriptor set", filepath.Base(f))
			}
			if c.Topic == "vehicle/speed" && packed == "json" && c.Metadata[MetadataLayout] == "" {
				t.Errorf("%s: transcoded channel without its layout", filepath.Base(f))
			}
		}
		if seen["vehicle/speed"] != 2 || len(seen) != 4 {
			t.Errorf("%s: channels per topic %v, want speed twice (its type changed), the others once", filepath.Base(f), seen)
		}
		counts := map[string]int{}
		for _, m := range msgs {
			counts[m.name]++
		}
		for topic, js := range r.Indexed.JSON {
			if js.Bad != 0 || js.OK != counts[topic] {
				t.Errorf("%s: %s: JSON.parse read %d, failed %d, of %d", filepath.Base(f), topic, js.OK, js.Bad, counts[topic])
			}
		}
		if packed == "json" && r.Indexed.JSON["vehicle/speed"].OK != counts["vehicle/speed"] {
			t.Errorf("%s: the transcoded speed did not parse", filepath.Base(f))
		}
	}
}
