package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// catJSONLine is one line of "cat --jsonl --payload base64" as its help
// specifies it, written here independently of cat's code.
func catJSONLine(topic string, ts, gen int64, data []byte) string {
	tp, _ := json.Marshal(topic)
	var b strings.Builder
	fmt.Fprintf(&b, `{"topic":%s,"ts":%d,"time":"%s"`, tp, ts, rfc3339(ts))
	if gen != 0 {
		fmt.Fprintf(&b, `,"gen_ts":%d,"gen_time":"%s"`, gen, rfc3339(gen))
	}
	fmt.Fprintf(&b, `,"size":%d`, len(data))
	if len(data) > 0 {
		fmt.Fprintf(&b, `,"data":"%s"`, base64.StdEncoding.EncodeToString(data))
	}
	return b.String() + "}\n"
}

// writeCrossCheckPack writes the typed corpus (packed structs with a
// change of layout, protobuf, JSON Schema, raw) and a topic with a
// channel, meta bytes, no producer time and an empty payload.
func writeCrossCheckPack(t *testing.T, path string) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "cross-check", CreatedNs: t0, TargetFrameSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range typedTestMessages() {
		if err := w.SetTopicType(m.name, "", m.typ, m.t); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(m.name, "", nil, m.t-100, m.t, m.data); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			data := bytes.Repeat([]byte{byte(i)}, i%3) // some empty
			if err := w.Add("cam", "front", []byte{9, byte(i)}, 0, m.t, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestE2ETimelineMatchesCat: every format the command reads (every row of
// dumpfile.Formats that opens), read through the public package, gives
// exactly the lines "cat --jsonl" prints for the same file through the
// built binary: dumpfile.Walk line for line, and the Timeline (OpenTimeline
// and its Iterator) line for line too, through the one documented
// difference for MCAP dumps edr-lite writes (docs/mcap.md): cat shows
// them as stored, a packed struct transcoded to JSON and a message's meta
// bytes on a topic of their own (NAME/meta), where the Timeline gives the
// pack-model message (packed bytes whose layout's JSON is what the file
// stores, meta in Message.Meta). Standard input (a pack stream) too.
func TestE2ETimelineMatchesCat(t *testing.T) {
	dir := t.TempDir()
	pk := filepath.Join(dir, "dump.pack")
	writeCrossCheckPack(t, pk)
	bin := func(args ...string) string {
		t.Helper()
		code, out, errs := runBin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	type sample struct {
		name, format, path string
		edrMCAP            bool // an MCAP dump of edr-lite's: meta bytes on NAME/meta
		transcoded         bool // and packed topics stored as JSON
		dbc                bool // cat --dbc, dumpfile.SetDBC: the CAN frames decoded too
	}
	samples := []sample{{name: "pack", format: dumpfile.FormatPack, path: pk}}
	covered := map[string]bool{}
	for _, exp := range []struct {
		name string
		args []string
	}{{"mcap", nil}, {"mcap-zstd", []string{"--compression", "zstd"}}, {"mcap-keep-packed", []string{"--keep-packed"}}} {
		p := filepath.Join(dir, exp.name+".mcap")
		bin(append([]string{"export", "--format", "mcap", pk, "-o", p}, exp.args...)...)
		samples = append(samples, sample{name: exp.name, format: dumpfile.FormatMCAP, path: p, edrMCAP: true, transcoded: exp.name != "mcap-keep-packed"})
	}
	others, _ := filepath.Glob(filepath.Join("..", "..", "mcap", "testdata", "other", "*.mcap"))
	if len(others) == 0 {
		t.Fatal("no MCAP files of other writers in mcap/testdata/other")
	}
	for _, p := range others {
		samples = append(samples, sample{name: "other writer " + filepath.Base(p), format: dumpfile.FormatMCAP, path: p})
	}
	js := filepath.Join(dir, "dump.jsonl")
	bin("export", "--format", "jsonl", pk, "-o", js)
	samples = append(samples, sample{name: "jsonl", format: dumpfile.FormatJSONL, path: js})
	jd := filepath.Join(dir, "front")
	writeJPEGDir(t, jd, 5, t0, 33e6)
	samples = append(samples, sample{name: "jpeg-dir", format: dumpfile.FormatJPEGDir, path: jd})
	if needFFmpeg() == nil {
		mp := filepath.Join(dir, "rear.mp4")
		makeMP4(t, mp, false, "2025-12-02T10:06:40Z")
		samples = append(samples, sample{name: "mp4", format: dumpfile.FormatMP4, path: mp})
	} else {
		covered[dumpfile.FormatMP4] = true // nothing to make one with: said in the log
		t.Logf("mp4: not tried: %v", needFFmpeg())
	}

	_, canLog := writeCANLog(t)
	asc := filepath.Join(dir, "drive.asc")
	bin("export", "--format", "asc", canLog, "-o", asc)
	brake := filepath.Join(dir, "brake.log")
	os.WriteFile(brake, []byte(brakeLog), 0o644)
	brakePack := filepath.Join(dir, "brake.pack")
	bin("import", "--format", "candump", brake, "-o", brakePack)
	samples = append(samples, sample{name: "candump", format: dumpfile.FormatCandump, path: canLog},
		sample{name: "asc", format: dumpfile.FormatASC, path: asc},
		sample{name: "candump --dbc", format: dumpfile.FormatCandump, path: brake, dbc: true},
		sample{name: "pack --dbc", format: dumpfile.FormatPack, path: brakePack, dbc: true})

	for _, s := range samples {
		covered[s.format] = true
		t.Run(s.name, func(t *testing.T) {
			cat := []string{"cat", "--jsonl", "--payload", "base64", s.path}
			if s.dbc {
				d, err := loadDBC(testDBC)
				if err != nil {
					t.Fatal(err)
				}
				cat = append(cat, "--dbc", testDBC)
				dumpfile.SetDBC(d)
				defer dumpfile.SetDBC(nil)
			}
			want := bin(cat...)
			if s.dbc && !strings.Contains(want, `"topic":"can/can0/Brake"`) {
				t.Fatalf("cat --dbc decoded nothing:\n%s", want)
			}
			if strings.Count(want, "\n") < 5 {
				t.Fatalf("cat printed %d lines", strings.Count(want, "\n"))
			}
			var walked strings.Builder
			if err := dumpfile.Walk(s.path, func(m *dumpfile.Msg) error {
				walked.WriteString(catJSONLine(m.Topic, m.TimeNs, m.GenNs, m.Data))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			sameLines(t, "dumpfile.Walk", walked.String(), want)
			sameLines(t, "the Timeline", timelineAsCat(t, s.path, s.edrMCAP, s.transcoded), want)
		})
	}
	for _, f := range dumpfile.Formats() {
		if f.Open && !covered[f.Name] {
			t.Errorf("format %s is read by the command but has no sample in this test", f.Name)
		}
	}
	code, out, errs := runBinStdin(t, pk, "cat", "--jsonl", "--payload", "base64", "-")
	if code != 0 {
		t.Fatalf("cat -: exit %d: %s", code, errs)
	}
	sameLines(t, "standard input", timelineAsCat(t, pk, false, false), out)
}

// needFFmpeg says why MP4s cannot be made here, nil when they can.
func needFFmpeg() error {
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			return err
		}
	}
	return nil
}

// timelineAsCat reads path through the public Timeline and writes each
// message as cat --jsonl prints it; edrMCAP: an MCAP dump of edr-lite's,
// which stores meta bytes on NAME/meta; transcoded: and packed topics as
// JSON (see TestE2ETimelineMatchesCat).
func timelineAsCat(t *testing.T, path string, edrMCAP, transcoded bool) string {
	t.Helper()
	tl, err := dumpfile.OpenTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages()
	if err != nil {
		t.Fatal(err)
	}
	layouts := map[*ingest.Type]*schema.Layout{}
	var b strings.Builder
	for {
		m, err := it.Next()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		data := m.Data
		if edrMCAP && data == nil {
			data = m.Meta // a message of meta only is stored on the topic itself
		} else if transcoded && m.Type.MessageEncoding == ingest.EncodingPacked {
			l := layouts[m.Type]
			if l == nil {
				if l, err = schema.ParseLayout(m.Type.Schema.Data); err != nil {
					t.Fatal(err)
				}
				layouts[m.Type] = l
			}
			if data, err = l.AppendJSON(nil, m.Data); err != nil {
				t.Fatal(err)
			}
		}
		b.WriteString(catJSONLine(m.Topic(), m.TimeNs, m.GenNs, data))
		if edrMCAP && m.Data != nil && len(m.Meta) > 0 {
			b.WriteString(catJSONLine(m.Topic()+mcap.MetaChannelSuffix, m.TimeNs, m.GenNs, m.Meta))
		}
	}
}

// sameLines fails at the first line that differs.
func sameLines(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: line %d:\n got %s\nwant %s", what, i+1, g[i], w[i])
		}
	}
	if len(g) != len(w) {
		t.Fatalf("%s: %d lines, cat printed %d", what, len(g)-1, len(w)-1)
	}
}
