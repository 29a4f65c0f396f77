package dumpfile

import (
	"bytes"
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
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// msg is a stream message, copied.
type msg struct {
	src                 int
	name, channel       string
	gen, done, time     int64
	meta, data          []byte
	hasMeta, hasPayload bool
}

func streamAll(t *testing.T, sources ...*Source) []msg {
	t.Helper()
	m := NewMessages(sources...)
	var out []msg
	for {
		ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		g := m.Message()
		if g.TimeNs != m.Time() {
			t.Fatalf("Message().TimeNs %d, Time() %d", g.TimeNs, m.Time())
		}
		out = append(out, msg{m.Source(), g.Name, g.Channel, g.GenNs, g.DoneNs, g.TimeNs, bytes.Clone(g.Meta), bytes.Clone(g.Data),
			g.Meta != nil, g.Data != nil})
	}
}

// sameStream fails at the first message that differs.
func sameStream(t *testing.T, what string, got, want []msg) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: message %d\n got %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
}

func openSource(t *testing.T, path string) *Source {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeRichPack writes topics with channels, producer times, meta bytes
// and empty payloads, with dump information; times start at t0 and step by
// 10, two messages at each time (so two files started 10 apart have equal
// times).
func writeRichPack(t *testing.T, path string, t0 int64, trigger string) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test", TargetFrameSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		ts := t0 + int64(i/2)*10
		name, ch := "speed", ""
		var meta []byte
		if i%3 == 1 {
			name, ch, meta = "cam", "front", []byte{1, byte(i)}
		}
		data := bytes.Repeat([]byte{byte(i)}, i%7)
		if err := w.Add(name, ch, meta, ts-3, ts, data); err != nil {
			t.Fatal(err)
		}
	}
	err = w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: trigger, TimeNs: t0 + 100, FromNs: t0, ToNs: t0 + 300}},
		Topics: []dumpinfo.TopicAccount{{Topic: "speed#", Type: "f32", Messages: 40, Overwritten: 2, LostAtSource: 1},
			{Topic: "cam#front", Type: "img", Messages: 20, Oversize: 3}}, StartNs: t0, EndNs: t0 + 300})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func exportToMCAP(t *testing.T, packPath, comp string) string {
	t.Helper()
	r, err := pack.Open(packPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := packPath + "." + comp + ".mcap"
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := mcap.ExportPack(r, f, mcap.ExportOptions{Options: mcap.Options{Compression: comp, ChunkSize: 512}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStreamMCAPLikePack: an MCAP export streams exactly as its pack dump,
// alone and merged with a pack dump (ties in source order), with the same
// topics, types and dump information.
func TestStreamMCAPLikePack(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	writeRichPack(t, b, 1010, "b")
	pa, pb := openSource(t, a), openSource(t, b)
	want := streamAll(t, pa)
	wantMixed := streamAll(t, pb, pa)
	for _, comp := range []string{mcap.CompressionNone, mcap.CompressionLZ4} {
		ma := openSource(t, exportToMCAP(t, a, comp))
		if ma.Format != FormatMCAP || ma.Pack() != nil || ma.MCAP() == nil {
			t.Fatalf("%s: format %s", ma.Path, ma.Format)
		}
		sameStream(t, comp+": MCAP", streamAll(t, ma), want)
		sameStream(t, comp+": pack + MCAP", streamAll(t, pb, ma), wantMixed)
		di, _ := pa.DumpInfo()
		if d, ok := ma.DumpInfo(); !ok || !reflect.DeepEqual(d, di) {
			t.Errorf("%q: dump info %+v, want %+v", comp, d, di)
		}
		pt := slices.Clone(pa.Topics())
		mt := slices.Clone(ma.Topics())
		byName := func(x, y SourceTopic) int { return strings.Compare(x.String(), y.String()) }
		slices.SortFunc(pt, byName)
		slices.SortFunc(mt, byName)
		if !reflect.DeepEqual(pt, mt) || pt[0].Type.Schema.Name != "img" {
			t.Errorf("%q: topics %+v, want %+v", comp, mt, pt)
		}
		if pa.EndNs() != ma.EndNs() || pa.EndNs() != 1000+290 {
			t.Errorf("%q: EndNs %d, pack %d", comp, ma.EndNs(), pa.EndNs())
		}
	}
	// equal times: the first source's messages first
	if len(wantMixed) != 120 || wantMixed[1].src != 1 || wantMixed[2].time != 1010 || wantMixed[2].src != 0 ||
		wantMixed[3].src != 0 || wantMixed[4].time != 1010 || wantMixed[4].src != 1 {
		t.Fatalf("pack + pack: %+v", wantMixed[:5])
	}
}

// TestMergeMCAPAndPack merges an MCAP dump with a pack dump: the output is
// the merge of the two pack dumps, message for message, with every trigger
// and the summed accounting.
func TestMergeMCAPAndPack(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	writeRichPack(t, b, 1010, "b")
	bm := exportToMCAP(t, b, mcap.CompressionZstd)
	want, got := filepath.Join(dir, "want.pack"), filepath.Join(dir, "got.pack")
	if _, err := Merge([]string{a, b}, want, pack.WriterOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := Merge([]string{a, bm}, got, pack.WriterOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 120 || rep.Triggers != 2 || rep.Inputs != 2 {
		t.Errorf("report %+v", rep)
	}
	ws, gs := openSource(t, want), openSource(t, got)
	wm, gm := streamAll(t, ws), streamAll(t, gs)
	sameStream(t, "merged", gm, wm)
	for i := 1; i < len(gm); i++ {
		if gm[i].time < gm[i-1].time {
			t.Fatalf("merge out of order at %d", i)
		}
	}
	wd, _ := ws.DumpInfo()
	gd, ok := gs.DumpInfo()
	if !ok || !reflect.DeepEqual(gd, wd) || len(gd.Triggers) != 2 || gd.Topics[1].Overwritten != 4 || gd.Topics[1].LostAtSource != 2 {
		t.Errorf("merged dump info %+v\nwant %+v", gd, wd)
	}
}

// TestStreamUnorderedMCAP writes an MCAP dump whose messages are out of
// log_time order (within and across chunks): the stream comes out in
// capture-time order, equal times in file order, each meta with its
// message.
func TestStreamUnorderedMCAP(t *testing.T) {
	type in struct {
		name       string
		gen, done  int64
		meta, data []byte
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var ins []in
	for i := range 500 {
		m := in{name: fmt.Sprintf("t%d", i%3), done: int64(rng.IntN(200)) + 1, gen: int64(i) + 1, data: []byte(fmt.Sprint(i))}
		if i%5 == 0 {
			m.meta = []byte{byte(i)}
		}
		ins = append(ins, m)
	}
	path := filepath.Join(t.TempDir(), "unordered.mcap")
	pw, err := mcap.CreatePackWriter(path, mcap.FileOptions{Options: mcap.Options{Compression: mcap.CompressionZstd, ChunkSize: 700}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ins {
		if err := pw.Add(m.name, "", m.meta, m.gen, m.done, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ins)
	slices.SortStableFunc(want, func(a, b in) int { return int(a.done - b.done) })
	got := streamAll(t, openSource(t, path))
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.name != w.name || g.done != w.done || g.time != w.done || g.gen != w.gen || !bytes.Equal(g.data, w.data) || !bytes.Equal(g.meta, w.meta) {
			t.Fatalf("message %d: %+v, want %+v", i, g, w)
		}
	}
	// file order stays available (export)
	var fileOrder []int64
	if err := openSource(t, path).InFileOrder(func(m *Message) error { fileOrder = append(fileOrder, m.GenNs); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range fileOrder {
		if fileOrder[i] != int64(i)+1 {
			t.Fatalf("file order: %v", fileOrder[:i+1])
		}
	}
}

// TestStreamOtherWriterMCAP reads MCAP files of the reference TypeScript
// writer (no edr-lite metadata; unchunked, chunked, zstd, without
// statistics) as sources: the channel topics, types from the schema or the
// message encoding, log_time as time, publish_time as producer time.
func TestStreamOtherWriterMCAP(t *testing.T) {
	for _, name := range []string{"unchunked", "chunked-none", "chunked-zstd", "no-statistics"} {
		s := openSource(t, filepath.Join("..", "mcap", "testdata", "other", name+".mcap"))
		got := streamAll(t, s)
		if len(got) != 60 {
			t.Fatalf("%s: %d messages", name, len(got))
		}
		for i, g := range got {
			topic := []string{"/a", "/b"}[i%2]
			if g.name != topic || g.channel != "" || g.time != int64(1000+i) || g.gen != int64(500+i) || len(g.data) != (i*13)%500 || !g.hasPayload {
				t.Fatalf("%s: message %d: %+v", name, i, g)
			}
		}
		if tp := s.Topics(); len(tp) != 2 || tp[0].Type.Schema.Name != "S" || tp[0].Messages != 30 || tp[1].Type.MessageEncoding == "" {
			t.Errorf("%s: topics %+v", name, tp)
		}
		if _, ok := s.DumpInfo(); ok {
			t.Errorf("%s: dump info in a file without one", name)
		}
	}
}

// TestOpenErrors: a file of another format is named with what it starts
// with; a damaged MCAP file is a CorruptError naming it.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil || err.Error() != empty+": dumpfile: not a "+wantReadable+" file: the file is empty" {
		t.Errorf("empty: %v", err)
	}
	a := filepath.Join(dir, "a.pack")
	writeRichPack(t, a, 1000, "a")
	m := exportToMCAP(t, a, mcap.CompressionNone)
	b, _ := os.ReadFile(m)
	b[len(b)/2] ^= 0xff
	os.WriteFile(m, b, 0o644)
	var ce *mcap.CorruptError
	if _, err := Open(m); !errorsAs(err, &ce) || ce.File != m {
		t.Errorf("damaged MCAP: %v", err)
	}
	if _, err := OpenBytes("mem", b, mcap.ReaderOptions{}); !errorsAs(err, &ce) || ce.File != "mem" {
		t.Errorf("damaged MCAP in memory: %v", err)
	}
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

// TestMCAPInfoIndexed: info calls an MCAP file indexed when its summary
// section gives the figures without reading the data (ours always has
// one), and says so per file for other writers' files.
func TestMCAPInfoIndexed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeRichPack(t, p, 1000, "a")
	for path, want := range map[string]bool{
		exportToMCAP(t, p, mcap.CompressionZstd):    true,
		"../mcap/testdata/other/chunked-zstd.mcap":  true,
		"../mcap/testdata/other/no-statistics.mcap": false,
	} {
		in, err := ReadInfo(path)
		if err != nil {
			t.Fatal(err)
		}
		if in.Indexed != want || in.Messages == 0 {
			t.Errorf("%s: indexed %v with %d messages, want indexed %v", path, in.Indexed, in.Messages, want)
		}
	}
}
