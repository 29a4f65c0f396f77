package jsonl_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/jsonl"
	"github.com/edr-lite/edr-lite/pack"
)

const t0 = int64(1_764_670_000_000_000_000)

// payload is a checkable payload: its length and every byte depend on
// (topic, i).
func payload(topic string, i int, maxLen int) []byte {
	h := uint64(14695981039346656037)
	for _, c := range []byte(topic) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	x := h ^ uint64(i)*0x9E3779B97F4A7C15
	n := 8 + int(x%uint64(maxLen-7))
	b := make([]byte, n)
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// richDump writes a dump exercising everything the export must keep:
// channels, meta bytes, missing producer or capture times, messages without
// data and with empty data, compression, dump info and another metadata
// section.
func richDump(t *testing.T, comp pack.Compression) string {
	p := filepath.Join(t.TempDir(), "rich.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "rich test", CreatedNs: 1234, Compression: comp, TargetFrameSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		ts := t0 + int64(i)*1e6
		var err error
		switch i % 6 {
		case 0:
			err = w.Add("vehicle/speed", "", nil, ts-10, ts, payload("s", i, 64))
		case 1:
			err = w.Add("vehicle/speed", "rear", []byte{1, 2, byte(i)}, ts-10, ts, payload("r", i, 64))
		case 2:
			err = w.Add("camera/front", "", nil, 0, ts, bytes.Repeat([]byte{byte(i)}, 1500)) // compressible
		case 3:
			err = w.Add("heartbeat", "", []byte("meta only"), ts, ts, nil)
		case 4:
			err = w.Add("heartbeat", "", nil, ts, 0, []byte{}) // empty data block, no capture time
		case 5:
			err = w.Add("odd\"name\\é#x", "ch\n1", nil, ts, ts+5, payload("o", i, 10))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 3, Reason: "hard-brake", Rule: "hard_brake", Source: "lua", TimeNs: t0 + 5e6, PreNs: 1, PostNs: 2, Params: map[string]string{"decel": "6"}}},
		Topics: []dumpinfo.TopicAccount{{Topic: "vehicle/speed", Type: "f32", Messages: 50}, {Topic: "camera/front", Type: "gray8", Messages: 50}},
		Labels: map[string]string{"vin": "X"}})
	w.AddMetadata("calibration", []byte{0, 1, 2, 255})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

type packMsg struct {
	name, ch  string
	meta      []byte
	gen, done int64
	data      []byte
	hasData   bool
}

func readAll(t *testing.T, path string) (msgs []packMsg, meta map[string]string) {
	t.Helper()
	r, err := pack.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f pack.Frame
	for {
		if err := r.ReadInto(&f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < f.Len(); i++ {
			m := f.Message(i)
			msgs = append(msgs, packMsg{m.Name, m.Channel, bytes.Clone(m.Meta), m.GenTs, m.DoneTs, bytes.Clone(f.Data(i)), m.DataIndex != pack.NoData})
		}
	}
	meta = map[string]string{}
	for _, n := range r.MetadataNames() {
		b, _ := r.Metadata(n)
		meta[n] = string(b)
	}
	return msgs, meta
}

func exportFile(t *testing.T, path string) []byte {
	t.Helper()
	r, err := dumpfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := dumpfile.Export(r, dumpfile.FormatJSONL, &b, dumpfile.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func importTo(path string, in []byte) (*jsonl.Report, error) {
	return jsonl.Import(bytes.NewReader(in), func(o pack.WriterOptions) (*pack.Writer, error) { return pack.Create(path, o) })
}

func TestRoundTripBitExact(t *testing.T) {
	for _, comp := range []pack.Compression{pack.CompressNone, pack.CompressZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			src := richDump(t, comp)
			js := exportFile(t, src)
			out := filepath.Join(t.TempDir(), "back.pack")
			rep, err := importTo(out, js)
			if err != nil {
				t.Fatal(err)
			}
			want, wantMeta := readAll(t, src)
			got, gotMeta := readAll(t, out)
			if rep.Messages != uint64(len(want)) || rep.Topics != 5 {
				t.Errorf("report %+v, want %d messages, 5 topics", rep, len(want))
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages back, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.name != w.name || g.ch != w.ch || !bytes.Equal(g.meta, w.meta) || g.gen != w.gen || g.done != w.done ||
					!bytes.Equal(g.data, w.data) || g.hasData != w.hasData {
					t.Fatalf("message %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
			if fmt.Sprint(gotMeta) != fmt.Sprint(wantMeta) {
				t.Errorf("metadata\n got %q\nwant %q", gotMeta, wantMeta)
			}
			// exporting the import gives the same lines, header included
			if again := exportFile(t, out); !bytes.Equal(again, js) {
				t.Errorf("re-export differs:\n%s\n---\n%s", firstDiff(js, again), "")
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n%s\n%s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(al), len(bl))
}

func TestLineFormat(t *testing.T) {
	js := string(exportFile(t, richDump(t, pack.CompressNone)))
	lines := strings.Split(js, "\n")
	if !strings.HasPrefix(lines[0], `{"format":"edr-lite-jsonl","version":1,"writer":"rich test","created_ns":1234,"topics":[{"topic":"camera/front","name":"camera/front","type":"gray8","type_id":"`+
		ingest.Raw("gray8").ID().String()+`","messages":50},`) || !strings.Contains(lines[0], `"types":[{"id":"`+ingest.Raw("gray8").ID().String()+`","encoding":"x-edr-raw","schema_name":"gray8"},`) {
		t.Errorf("header %s", lines[0])
	}
	for i, want := range []string{
		`{"seq":0,"topic":"vehicle/speed","ts":1764670000000000000,"gen_ts":1764669999999999990,"data":"`,
		`{"seq":1,"topic":"vehicle/speed#rear","ts":1764670000001000000,"gen_ts":1764670000000999990,"meta":"AQIB","data":"`,
		`{"seq":3,"topic":"heartbeat","ts":1764670000003000000,"gen_ts":1764670000003000000,"meta":"bWV0YSBvbmx5"}`,
		`{"seq":4,"topic":"heartbeat","ts":1764670000004000000,"gen_ts":1764670000004000000,"done_ts":0,"data":""}`,
		`{"seq":5,"topic":"odd\"name\\é#x#ch\n1","ts":1764670000005000005,"gen_ts":1764670000005000000,"data":"`,
	} {
		n := []int{1, 2, 4, 5, 6}[i]
		if !strings.HasPrefix(lines[n], want) {
			t.Errorf("line %d:\n got %s\nwant %s…", n+1, lines[n], want)
		}
	}
}

func TestImportErrors(t *testing.T) {
	good := exportFile(t, richDump(t, pack.CompressNone))
	lines := strings.SplitAfter(string(good), "\n")
	hdr := lines[0]
	f := func(in string, has string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "x.pack")
		rep, err := importTo(out, []byte(in))
		if !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), has) || rep != nil {
			t.Errorf("import of %.60q: %v (report %v), want jsonl.ErrFormat containing %q", in, err, rep, has)
		}
	}
	f("", "empty input")
	f("not json\n", "line 1: header")
	f(`{"format":"other","version":1}`+"\n", `format "other"`)
	f(`{"format":"edr-lite-jsonl","version":2}`+"\n", "version 2 not supported")
	f(`{"format":"edr-lite-jsonl","version":1,"topics":[{"topic":"a","name":"a"},{"topic":"a","name":"a"}]}`+"\n", "listed twice")
	f(`{"format":"edr-lite-jsonl","version":1,"dump_info":{"triggers":7}}`+"\n", "dump_info")
	f(hdr+lines[2], "line 2: seq 1, want 0")
	f(hdr+lines[1]+"\n", "line 3: empty line")
	f(hdr+`{"seq":0,"topic":"nope","ts":1}`+"\n", `topic "nope" is not in the header`)
	f(hdr+`{"seq":0,"topic":"heartbeat"}`+"\n", "no ts")
	f(hdr+`{"topic":"heartbeat","ts":1}`+"\n", "no seq")
	f(hdr+`{"seq":0,"ts":1}`+"\n", "no topic")
	f(hdr+`{"seq":0,"topic":"heartbeat","ts":1,"data":"!!"}`+"\n", "line 2: data")
	f(hdr+`{"seq":0,"topic":"heartbeat","ts":1,"meta":"!!"}`+"\n", "line 2:")
	f(hdr+`{"seq":0,"topic":"heartbeat","ts":"x"}`+"\n", "line 2:")
	// a line longer than MaxLineBytes is refused by number, read no further
	// (a stream of zeros without a newline is not gathered until memory runs out)
	zeros := io.MultiReader(strings.NewReader(hdr), io.LimitReader(zeroReader{}, jsonl.MaxLineBytes+1<<20))
	if _, err := jsonl.Import(zeros, func(o pack.WriterOptions) (*pack.Writer, error) {
		return pack.NewStreamWriter(io.Discard, o)
	}); !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Errorf("over-long line: %v", err)
	}
	// a file without a final newline is fine
	out := filepath.Join(t.TempDir(), "ok.pack")
	if rep, err := importTo(out, []byte(strings.TrimSuffix(string(good), "\n"))); err != nil || rep.Messages != 300 {
		t.Errorf("no final newline: %v %+v", err, rep)
	}
}

// TestExportHeader: Export keys the topics it is given ("name", or
// "name#channel"; a key taken already gets "~index"), lists them by key,
// leaves the caller's slice alone, and refuses dump information that is
// not JSON and a message of a topic it was not given.
func TestExportHeader(t *testing.T) {
	topics := []jsonl.Topic{{Name: "b"}, {Name: "a", Channel: "x", Type: "T", Messages: 2}, {Name: "a#x"}}
	msgs := []jsonl.Message{{Name: "a#x", TimeNs: 5, Data: []byte{1}}, {Name: "a", Channel: "x", TimeNs: 6, DoneNs: 6}}
	walk := func(fn func(m *jsonl.Message) error) error {
		for i := range msgs {
			if err := fn(&msgs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	var b bytes.Buffer
	rep, err := jsonl.Export(&b, "mem", jsonl.Header{Writer: "w", Topics: topics}, walk)
	if err != nil || rep.Topics != 3 || rep.Messages != 2 || rep.Bytes != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	want := `{"format":"edr-lite-jsonl","version":1,"writer":"w","topics":[` +
		`{"topic":"a#x","name":"a","channel":"x","type":"T","messages":2},{"topic":"a#x#~2","name":"a#x","messages":0},{"topic":"b","name":"b","messages":0}]}
{"seq":0,"topic":"a#x#~2","ts":5,"gen_ts":0,"done_ts":0,"data":"AQ=="}
{"seq":1,"topic":"a#x","ts":6,"gen_ts":0}
`
	if b.String() != want {
		t.Errorf("export:\n%s\nwant\n%s", b.String(), want)
	}
	if topics[0].Topic != "" || topics[0].Name != "b" {
		t.Errorf("the caller's topics changed: %+v", topics)
	}
	if _, err := jsonl.Export(io.Discard, "mem", jsonl.Header{DumpInfo: []byte("{")}, walk); !errors.Is(err, jsonl.ErrFormat) || !strings.HasPrefix(err.Error(), "mem: ") {
		t.Errorf("dump info not JSON: %v", err)
	}
	if _, err := jsonl.Export(io.Discard, "mem", jsonl.Header{Topics: topics[:2]}, walk); !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), "a#x# is missing") {
		t.Errorf("unknown topic: %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestStampsLeftOut: a pack dump with a provenance section exports to
// JSON lines without it (it is true of the dump's bytes only), other
// metadata kept; an export that does carry a seal and a provenance (made
// before exports left them out, or by hand) imports without them, a note
// naming both.
func TestStampsLeftOut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stamped.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "stamp test", CreatedNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Add("a", "", nil, t0, t0, []byte{1})
	w.AddMetadata(evidence.ProvenanceName, []byte(`{"made_by":"edr-lite filter","sources":[],"signed_by":"c4569e3ff35eef52"}`))
	w.AddMetadata("calibration", []byte{7})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	exp := exportFile(t, p)
	hdr := string(exp[:bytes.IndexByte(exp, '\n')])
	if strings.Contains(hdr, evidence.ProvenanceName) || !strings.Contains(hdr, `"calibration":"Bw=="`) {
		t.Errorf("export header: %s", hdr)
	}
	out := filepath.Join(t.TempDir(), "x.pack")
	rep, err := importTo(out, exp)
	if err != nil || len(rep.Notes) != 0 {
		t.Fatalf("import of the export: %v %+v", err, rep)
	}
	stamped := strings.Replace(string(exp), `"metadata":{`, `"metadata":{"edr.provenance":"e30=","edr.seal":"e30=",`, 1)
	out = filepath.Join(t.TempDir(), "y.pack")
	if rep, err = importTo(out, []byte(stamped)); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "left out metadata edr.provenance, edr.seal") {
		t.Errorf("notes %q", rep.Notes)
	}
	_, meta := readAll(t, out)
	if _, ok := meta[evidence.ProvenanceName]; ok || meta["calibration"] != "\x07" || len(meta) != 1 {
		t.Errorf("imported metadata %q", meta)
	}
}
