package mcap

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

type packMsg struct {
	name, channel string
	meta          []byte
	gen, done     int64
	data          []byte
}

// packMessages makes a dump's worth of pack messages: raw data only
// (speed), meta only (status), meta and data (camera, every other one; the
// rest data only), and one topic with a channel.
func packMessages(n int) []packMsg {
	var out []packMsg
	base := int64(1_700_000_000_000_000_000)
	for i := range n {
		t := base + int64(i)*1_000_000
		switch i % 4 {
		case 0:
			out = append(out, packMsg{name: "vehicle/speed", gen: t - 100, done: t, data: []byte(fmt.Sprintf("speed %d", i))})
		case 1:
			out = append(out, packMsg{name: "status", meta: []byte{0x08, byte(i)}, gen: t, done: 0})
		case 2:
			img := bytes.Repeat([]byte{byte(i)}, 1000+i)
			var meta []byte
			if i%8 == 2 { // every other camera message has meta
				meta = []byte{0x10, byte(i), 0x18, 1}
			}
			out = append(out, packMsg{name: "camera", channel: "front", meta: meta, gen: t - 5000, done: t, data: img})
		case 3:
			out = append(out, packMsg{name: "vehicle/speed", gen: t, done: t + 1, data: []byte{}})
		}
	}
	return out
}

var testDumpInfo = dumpinfo.Info{
	Triggers: []dumpinfo.Trigger{{ID: 7, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", Severity: 2,
		TimeNs: 1_700_000_000_500_000_000, PreNs: 15e9, PostNs: 5e9, PreSet: true, PostSet: true, Params: map[string]string{"decel": "9.1"},
		FromNs: 1_700_000_000_500_000_000 - 15e9, ToNs: 1_700_000_000_500_000_000 + 5e9}},
	Topics: []dumpinfo.TopicAccount{
		{Topic: "vehicle/speed#", Type: "edr.demo.Speed", Messages: 50, Bytes: 400, Overwritten: 3},
		{Topic: "camera#front", Type: "edr.demo.Image", Messages: 25, Bytes: 30000, Oversize: 1},
	},
	Writer: "edr-lite test", Host: "ecu1", StartNs: 1, EndNs: 2, CreatedNs: 3, Labels: map[string]string{"vin": "X1"},
}

// writePack writes msgs to a pack file with the dump info and one extra
// metadata section.
func writePack(t testing.TB, path string, msgs []packMsg, c pack.Compression) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test", Compression: c, TargetFrameSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := w.Add(m.name, m.channel, m.meta, m.gen, m.done, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(testDumpInfo); err != nil {
		t.Fatal(err)
	}
	if err := w.AddMetadata("calibration", []byte{0, 1, 2, 0xff}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// wantExport is what ExportPack must produce from packMessages, as sent
// records in file order.
func wantExport(msgs []packMsg) []sent {
	var out []sent
	for _, m := range msgs {
		lt := m.done
		if lt == 0 {
			lt = m.gen
		}
		data := m.data
		if data == nil {
			data = m.meta
		}
		topic := TopicName(m.name, m.channel)
		out = append(out, sent{topic, Message{LogTime: uint64(lt), PublishTime: uint64(m.gen), Data: data}})
		if m.data != nil && len(m.meta) > 0 {
			out = append(out, sent{topic + MetaChannelSuffix, Message{LogTime: uint64(lt), PublishTime: uint64(m.gen), Data: m.meta}})
		}
	}
	return out
}

func exportFile(t testing.TB, packPath, out string, opt Options) ExportStats {
	t.Helper()
	r, err := pack.Open(packPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := ExportPack(r, f, ExportOptions{Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestExportPack(t *testing.T) {
	msgs := packMessages(400)
	want := wantExport(msgs)
	dir := t.TempDir()
	for _, pc := range []pack.Compression{pack.CompressNone, pack.CompressZstd} {
		in := filepath.Join(dir, fmt.Sprintf("in%d.pack", pc))
		writePack(t, in, msgs, pc)
		for _, comp := range compressions {
			t.Run(fmt.Sprintf("pack=%d/mcap=%q", pc, comp), func(t *testing.T) {
				out := filepath.Join(dir, fmt.Sprintf("out%d%s.mcap", pc, comp))
				st := exportFile(t, in, out, Options{Compression: comp, ChunkSize: 16 << 10})
				if st.Messages != uint64(len(msgs)) || st.Frames == 0 {
					t.Errorf("stats %+v", st)
				}
				r, err := Open(out, ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				var got []sent
				err = r.Messages(func(c *Channel, m *Message) error {
					got = append(got, sent{c.Topic, Message{LogTime: m.LogTime, PublishTime: m.PublishTime, Data: bytes.Clone(m.Data)}})
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				sameMessages(t, got, want)
				info, err := r.Info()
				if err != nil {
					t.Fatal(err)
				}
				checkExportInfo(t, info)
			})
		}
	}
}

func checkExportInfo(t *testing.T, info *Info) {
	t.Helper()
	types := map[string]string{}
	for _, c := range info.Channels {
		if c.Schema != nil {
			types[c.Topic] = c.Schema.Name
		}
	}
	if types["vehicle/speed"] != "edr.demo.Speed" || types["camera#front"] != "edr.demo.Image" || len(types) != 2 {
		t.Errorf("types from the dump info: %v", types)
	}
	md := map[string][]map[string]string{}
	for _, m := range info.Metadata {
		md[m.Name] = append(md[m.Name], m.KV)
	}
	tr := md[MetadataTrigger]
	if len(tr) != 1 || tr[0]["reason"] != "hard-brake" || tr[0]["time_ns"] != "1700000000500000000" ||
		tr[0]["rule"] != "hard_brake" || tr[0]["param.decel"] != "9.1" || tr[0]["pre_ns"] != "15000000000" {
		t.Errorf("trigger metadata %v", tr)
	}
	ts := md[MetadataTopicStats]
	if len(ts) != 2 || ts[0]["topic"] != "vehicle/speed" || ts[0]["overwritten"] != "3" || ts[1]["oversize"] != "1" {
		t.Errorf("topic stats metadata %v", ts)
	}
	var back dumpinfo.Info
	if d := md[MetadataDump]; len(d) != 1 || json.Unmarshal([]byte(d[0]["json"]), &back) != nil ||
		back.Triggers[0].Params["decel"] != "9.1" || back.Labels["vin"] != "X1" || d[0]["label.vin"] != "X1" {
		t.Errorf("dump info metadata %v", d)
	}
	if c := md["calibration"]; len(c) != 1 || c[0]["base64"] != base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}) {
		t.Errorf("extra metadata %v", c)
	}
}

// TestPackWriterDump writes a dump directly as MCAP through the PackWriter
// (what the recorder does with format = "mcap").
func TestPackWriterDump(t *testing.T) {
	msgs := packMessages(100)
	path := filepath.Join(t.TempDir(), "d.mcap")
	pw, err := CreatePackWriter(path, FileOptions{Options: Options{Compression: CompressionLZ4}})
	if err != nil {
		t.Fatal(err)
	}
	pw.DeclareTopic(Topic{Name: "vehicle/speed", Type: ingest.Raw("edr.demo.Speed")})
	pw.DeclareTopic(Topic{Name: "camera", Channel: "front", Type: ingest.Raw("edr.demo.Image")})
	for _, m := range msgs {
		if err := pw.Add(m.name, m.channel, m.meta, m.gen, m.done, m.data); err != nil {
			t.Fatal(err)
		}
	}
	_ = pw.SetDumpInfo(testDumpInfo)
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []sent
	if err := r.Messages(func(c *Channel, m *Message) error {
		got = append(got, sent{c.Topic, Message{LogTime: m.LogTime, PublishTime: m.PublishTime, Data: bytes.Clone(m.Data)}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, got, wantExport(msgs))
}

// dumpWriter is the method set the recorder can use for either format.
type dumpWriter interface {
	Add(name, channel string, meta []byte, genTs, doneTs int64, data []byte) error
	WriteFrame(f *pack.Frame) error
	AddMetadata(name string, data []byte) error
	SetDumpInfo(d dumpinfo.Info) error
	Flush() error
	Offset() int64
	Close() error
}

var (
	_ dumpWriter = (*pack.Writer)(nil)
	_ dumpWriter = (*PackWriter)(nil)
)

// TestPackWriterSequences: a message added with its producer's sequence
// (AddSeq) keeps it, on a channel marked MetadataSequence, and a
// PackReader gives it back with HasSeq; a message without one is numbered
// by the writer, on an unmarked channel, and comes back without one; a
// topic whose messages change between the two continues on the other
// channel, the count carried over.
func TestPackWriterSequences(t *testing.T) {
	var buf bytes.Buffer
	pw, err := NewPackWriter(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type add struct {
		topic  string
		seq    uint64
		hasSeq bool
	}
	adds := []add{{"a", 0, false}, {"a", 0, false}, {"a", 100, true}, {"a", 0, false}, {"b", 1<<32 + 5, true}, {"b", 9, true}}
	for i, a := range adds {
		var err error
		if a.hasSeq {
			err = pw.AddSeq(a.topic, "", nil, int64(i+1), int64(i+1), a.seq, []byte{byte(i)})
		} else {
			err = pw.Add(a.topic, "", nil, int64(i+1), int64(i+1), []byte{byte(i)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(buf.Bytes(), "seq", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint32
	var marked []bool
	err = r.Messages(func(c *Channel, m *Message) error {
		seqs = append(seqs, m.Sequence)
		marked = append(marked, c.Metadata[MetadataSequence] == SequenceProducer)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{0, 1, 100, 101, 5, 9}; fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Errorf("MCAP sequences %v, want %v", seqs, want)
	}
	if want := []bool{false, false, true, false, true, true}; fmt.Sprint(marked) != fmt.Sprint(want) {
		t.Errorf("channels marked %v, want %v", marked, want)
	}
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	p.FileOrder()
	for i := 0; ; i++ {
		ok, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		m, a := p.Message(), adds[i]
		if m.HasSeq != a.hasSeq || a.hasSeq && m.Seq != a.seq%(1<<32) {
			t.Errorf("message %d: seq %d (%v), want %d (%v)", i, m.Seq, m.HasSeq, a.seq, a.hasSeq)
		}
	}
	if n := len(p.Topics()); n != 2 {
		t.Errorf("%d topics: a topic's two channels are one topic", n)
	}
}
