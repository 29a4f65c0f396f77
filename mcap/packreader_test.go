package mcap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// backFromMCAP is what a PackReader must give for a pack message written
// through a PackWriter: the documented inverse, with its two lossy cases (a
// message with meta only comes back with the meta as data; a missing
// capture or producer time comes back as the other).
func backFromMCAP(m packMsg) PackMessage {
	lt := m.done
	if lt == 0 {
		lt = m.gen
	}
	pub := m.gen
	if pub == 0 {
		pub = lt
	}
	b := PackMessage{Name: m.name, Channel: m.channel, GenTs: pub, DoneTs: lt, Data: m.data}
	if m.data == nil {
		b.Data = m.meta
	} else if len(m.meta) > 0 {
		b.Meta = m.meta
	}
	return b
}

func packReaderAll(t *testing.T, p *PackReader) []PackMessage {
	t.Helper()
	var got []PackMessage
	for {
		ok, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		m := *p.Message()
		if m.Data == nil {
			t.Fatalf("message %d: nil data", len(got))
		}
		m.Data, m.Meta = bytes.Clone(m.Data), bytes.Clone(m.Meta)
		got = append(got, m)
	}
}

func samePackMessages(t *testing.T, got, want []PackMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Channel != w.Channel || g.GenTs != w.GenTs || g.DoneTs != w.DoneTs ||
			!bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Meta, w.Meta) || (g.Meta == nil) != (len(w.Meta) == 0) {
			t.Fatalf("message %d: got %+v\nwant %+v", i, g, w)
		}
	}
}

func openPackReader(t *testing.T, path string) *PackReader {
	t.Helper()
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPackReaderExport reads ExportPack's output back as a pack dump: the
// messages (with their meta), times, topics and types, the dump
// information byte for byte, the pack header and the other metadata.
func TestPackReaderExport(t *testing.T) {
	msgs := packMessages(400)
	var want []PackMessage
	for _, m := range msgs {
		want = append(want, backFromMCAP(m))
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pack")
	writePack(t, in, msgs, pack.CompressNone)
	pr, err := pack.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	rawInfo, _ := pr.Metadata(dumpinfo.MetadataName)
	for _, comp := range compressions {
		t.Run(fmt.Sprintf("compression=%q", comp), func(t *testing.T) {
			out := filepath.Join(dir, "out"+comp+".mcap")
			exportFile(t, in, out, Options{Compression: comp, ChunkSize: 4 << 10})
			p := openPackReader(t, out)
			samePackMessages(t, packReaderAll(t, p), want) // in time order: the pack is
			p.FileOrder()
			samePackMessages(t, packReaderAll(t, p), want)
			p.SeekTime(want[200].DoneTs)
			samePackMessages(t, packReaderAll(t, p), want[200:])

			topics := map[string]PackTopic{}
			for _, tp := range p.Topics() {
				topics[TopicName(tp.Name, tp.Channel)] = tp
			}
			if len(topics) != 3 || topics["vehicle/speed"].Type.Schema.Name != "edr.demo.Speed" || topics["vehicle/speed"].Messages != 200 ||
				topics["camera#front"].Type.Schema.Name != "edr.demo.Image" || topics["camera#front"].Channel != "front" ||
				topics["camera#front"].Messages != 100 || !topics["status"].Type.Equal(ingest.Raw("")) || topics["status"].Messages != 100 {
				t.Errorf("topics %+v", topics)
			}
			d, ok := p.DumpInfo()
			if !ok || !reflect.DeepEqual(d, testDumpInfo) || !bytes.Equal(p.DumpInfoJSON(), rawInfo) {
				t.Errorf("dump info %+v (%v)\njson %s\nwant %s", d, ok, p.DumpInfoJSON(), rawInfo)
			}
			if w, c := p.Header(); w != "test" || c != pr.Header().CreatedNs {
				t.Errorf("header %q %d, want test %d", w, c, pr.Header().CreatedNs)
			}
			names, data := p.Sections()
			if !slices.Equal(names, []string{"calibration"}) || !bytes.Equal(data[0], []byte{0, 1, 2, 0xff}) {
				t.Errorf("sections %q %v", names, data)
			}
		})
	}
}

// TestPackReaderUnordered writes pack messages out of time order through a
// PackWriter with small chunks (a meta message may open the next chunk):
// time order is the stable sort by capture time, every meta stays with its
// message, and file order is the order written.
func TestPackReaderUnordered(t *testing.T) {
	msgs := packMessages(300)
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	for i := range msgs {
		if msgs[i].done != 0 {
			msgs[i].done = msgs[i].done/1e8*1e8 + int64(i%3) // many equal times
		}
	}
	var want []PackMessage
	for _, m := range msgs {
		want = append(want, backFromMCAP(m))
	}
	for _, comp := range compressions {
		t.Run(fmt.Sprintf("compression=%q", comp), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "u.mcap")
			pw, err := CreatePackWriter(path, FileOptions{Options: Options{Compression: comp, ChunkSize: 1500}})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if err := pw.Add(m.name, m.channel, m.meta, m.gen, m.done, m.data); err != nil {
					t.Fatal(err)
				}
			}
			if err := pw.Close(); err != nil {
				t.Fatal(err)
			}
			p := openPackReader(t, path)
			sorted := slices.Clone(want)
			slices.SortStableFunc(sorted, func(a, b PackMessage) int { return int(a.DoneTs - b.DoneTs) })
			if slices.EqualFunc(sorted, want, func(a, b PackMessage) bool { return a.DoneTs == b.DoneTs }) {
				t.Fatal("the input is in order: nothing tested")
			}
			samePackMessages(t, packReaderAll(t, p), sorted)
			p.FileOrder()
			samePackMessages(t, packReaderAll(t, p), want)
			if _, ok := p.DumpInfo(); ok || p.DumpInfoJSON() != nil {
				t.Error("dump info in a file without one")
			}
		})
	}
}

// TestPackReaderOtherWriters reads the reference TypeScript writer's files
// (no edr metadata): topic = channel topic, type = schema name or message
// encoding, capture time = log_time, producer time = publish_time.
func TestPackReaderOtherWriters(t *testing.T) {
	raw := otherMessages(60)
	for _, name := range []string{"unchunked", "chunked-none", "chunked-zstd", "no-statistics"} {
		t.Run(name, func(t *testing.T) {
			p := openPackReader(t, filepath.Join("testdata", "other", name+".mcap"))
			got := packReaderAll(t, p)
			if len(got) != len(raw) {
				t.Fatalf("%d messages, want %d", len(got), len(raw))
			}
			for i, w := range raw {
				g := got[i]
				if g.Name != w.topic || g.Channel != "" || g.DoneTs != int64(w.m.LogTime) || g.GenTs != int64(w.m.PublishTime) ||
					!bytes.Equal(g.Data, w.m.Data) || g.Meta != nil {
					t.Fatalf("message %d: %+v, want %s %+v", i, g, w.topic, w.m)
				}
			}
			tps := p.Topics()
			if len(tps) != 2 || tps[0].Name != "/a" || tps[0].Type.Schema.Name != "S" || tps[0].Messages != 30 ||
				tps[1].Name != "/b" || tps[1].Type.MessageEncoding != tps[1].MCAP.MessageEncoding || tps[1].Messages != 30 {
				t.Errorf("topics %+v", tps)
			}
			if w, c := p.Header(); w != "mcap-ts" || c != 0 {
				t.Errorf("header %q %d", w, c)
			}
			if names, data := p.Sections(); len(names) != 1 || !strings.Contains(string(data[0]), `"robot":"r2"`) {
				t.Errorf("sections %q %q", names, data)
			}
		})
	}
}

// TestReadDumpInfoRecords rebuilds the dump information from the trigger
// and topic records when there is no JSON, and names a bad JSON record.
func TestReadDumpInfoRecords(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDumpInfo(w, testDumpInfo); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(buf.Bytes(), "d.mcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Info()
	if err != nil {
		t.Fatal(err)
	}
	var records []Metadata
	for _, md := range info.Metadata {
		if md.Name != MetadataDump {
			records = append(records, md)
		}
	}
	d, ok, err := ReadDumpInfo(records)
	want := testDumpInfo
	want.Writer, want.Host, want.StartNs, want.EndNs, want.CreatedNs, want.Labels = "", "", 0, 0, 0, nil
	want.Topics = slices.Clone(want.Topics)
	want.Topics[0].Topic = "vehicle/speed" // the records hold the MCAP topic
	if err != nil || !ok || !reflect.DeepEqual(d, want) {
		t.Errorf("from records: %+v, %v, %v\nwant %+v", d, ok, err, want)
	}
	if _, ok, err := ReadDumpInfo(nil); ok || err != nil {
		t.Errorf("no records: %v %v", ok, err)
	}
	_, _, err = ReadDumpInfo([]Metadata{{Name: MetadataDump, KV: map[string]string{"json": "{not json"}}})
	var se *json.SyntaxError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), MetadataDump) {
		t.Errorf("bad json: %v", err)
	}
}

// TestExportMCAP converts MCAP to MCAP: an edr-lite export reads back the
// same pack messages, dump information and header; a file of another
// writer keeps its messages, schemas, encodings and metadata.
func TestExportMCAP(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pack")
	msgs := packMessages(200)
	writePack(t, in, msgs, pack.CompressNone)
	first := filepath.Join(dir, "first.mcap")
	exportFile(t, in, first, Options{})
	for i, src := range []string{first, filepath.Join("testdata", "other", "chunked-zstd.mcap")} {
		p := openPackReader(t, src)
		want := packReaderAll(t, p)
		out := filepath.Join(dir, fmt.Sprintf("again%d.mcap", i))
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ExportMCAP(p, f, ExportOptions{Options: Options{Compression: CompressionLZ4}})
		f.Close()
		if err != nil || st.Messages != uint64(len(want)) {
			t.Fatalf("%s: %+v, %v", src, st, err)
		}
		again := openPackReader(t, out)
		samePackMessages(t, packReaderAll(t, again), want)
		d1, ok1 := p.DumpInfo()
		d2, ok2 := again.DumpInfo()
		w1, c1 := p.Header()
		w2, c2 := again.Header()
		if ok1 != ok2 || !reflect.DeepEqual(d1, d2) || w1 != w2 && i == 0 || c1 != c2 {
			t.Errorf("%s: dump info or header changed: %+v %q %d / %+v %q %d", src, d1, w1, c1, d2, w2, c2)
		}
		n1, s1 := p.Sections()
		n2, s2 := again.Sections()
		if !slices.Equal(n1, n2) || !reflect.DeepEqual(s1, s2) {
			t.Errorf("%s: sections %q -> %q", src, n1, n2)
		}
		for j, tp := range p.Topics() {
			a, b := tp.MCAP, again.Topics()[j].MCAP
			if a.MessageEncoding != b.MessageEncoding || (a.Schema == nil) != (b.Schema == nil) ||
				a.Schema != nil && (a.Schema.Name != b.Schema.Name || a.Schema.Encoding != b.Schema.Encoding || !bytes.Equal(a.Schema.Data, b.Schema.Data)) {
				t.Errorf("%s: channel %s: %+v -> %+v", src, a.Topic, a, b)
			}
			for k, v := range a.Metadata {
				if b.Metadata[k] != v {
					t.Errorf("%s: channel %s metadata %s=%q -> %q", src, a.Topic, k, v, b.Metadata[k])
				}
			}
		}
	}
}
