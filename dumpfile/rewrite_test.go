package dumpfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

const r0 = int64(1_764_670_000_000_000_000)

// writeRewriteInput writes a pack dump: topics a (every 10ms, with meta)
// and b#left (every 25ms) over 1s, a trigger at +500ms, an extra metadata
// section, and accounting with losses.
func writeRewriteInput(t *testing.T, path string) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test", TargetFrameSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	for ms := int64(0); ms < 1000; ms += 5 {
		ts := r0 + ms*1e6
		if ms%10 == 0 {
			w.Add("a", "", []byte{'m', byte(ms)}, ts-7, ts, []byte{byte(ms), byte(ms >> 8)})
		}
		if ms%25 == 0 {
			w.Add("b", "left", nil, 0, ts, bytes.Repeat([]byte{byte(ms)}, 100))
		}
	}
	w.AddMetadata("calibration", []byte(`{"k":1}`))
	w.SetDumpInfo(dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 4, Reason: "r", TimeNs: r0 + 500e6, PreNs: 5e8, PostNs: 5e8}},
		Topics: []dumpinfo.TopicAccount{{Topic: "a#", Type: "A", Messages: 100, Bytes: 200, Overwritten: 2},
			{Topic: "b#left", Type: "B", Messages: 40, Bytes: 4000, Oversize: 1}},
		StartNs: r0, EndNs: r0 + 1e9, Host: "h", Labels: map[string]string{"vin": "X"},
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func openOne(t *testing.T, path string) *Source {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRewriteCut(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pack")
	writeRewriteInput(t, in)
	whole := streamAll(t, openOne(t, in))
	for _, format := range []string{FormatPack, FormatMCAP} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(dir, "cut."+format)
			tp, _ := filter.ParseTopics("a", "")
			rep, err := Rewrite([]*Source{openOne(t, in)}, Output{Path: out}, RewriteOptions{Format: format, Compression: "zstd",
				Writer: "w", Topics: TopicFilter(tp), Window: &Window{FromNs: r0 + 100e6, ToNs: r0 + 599e6}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Messages != 50 || len(rep.Parts) != 1 || rep.Parts[0].Triggers != 1 || rep.Held != 140 {
				t.Errorf("report %+v", rep)
			}
			if _, err := os.Stat(out + ".tmp"); err == nil {
				t.Error("a .tmp is left")
			}
			s := openOne(t, out)
			got := streamAll(t, s)
			var want []msg
			for _, m := range whole {
				if m.name == "a" && m.time >= r0+100e6 && m.time <= r0+599e6 {
					want = append(want, m)
				}
			}
			sameStream(t, "cut", got, want)
			d, ok := s.DumpInfo()
			if !ok || d.Cut == nil {
				t.Fatal("no cut record")
			}
			wantCut := dumpinfo.Cut{Of: []string{"in.pack"}, FromNs: r0 + 100e6, ToNs: r0 + 599e6, Topics: []string{"a"},
				Messages: 90, DroppedTopics: []string{"b#left"}}
			if !equalCut(*d.Cut, wantCut) {
				t.Errorf("cut = %+v\nwant %+v", *d.Cut, wantCut)
			}
			if d.StartNs != r0+100e6 || d.EndNs != r0+599e6 || d.Host != "h" || d.Labels["vin"] != "X" || d.Writer != "w" {
				t.Errorf("info %+v", d)
			}
			if len(d.Topics) != 1 || d.Topics[0] != (dumpinfo.TopicAccount{Topic: "a#", Type: "A", Messages: 50, Bytes: 100,
				Overwritten: 2, FirstNs: r0 + 100e6, LastNs: r0 + 590e6, Cut: 50}) {
				t.Errorf("topics %+v", d.Topics)
			}
			if len(d.Triggers) != 1 || d.Triggers[0].ID != 4 {
				t.Errorf("triggers %+v", d.Triggers)
			}
			if r := s.Pack(); r != nil {
				if b, ok := r.Metadata("calibration"); !ok || string(b) != `{"k":1}` {
					t.Errorf("metadata not carried: %q", b)
				}
			} else if names, data := s.MCAP().Sections(); !slices.Contains(names, "calibration") || string(data[0]) != `{"k":1}` {
				t.Errorf("MCAP metadata %v %q", names, data)
			}
		})
	}
}

func equalCut(a, b dumpinfo.Cut) bool {
	return slices.Equal(a.Of, b.Of) && a.FromNs == b.FromNs && a.ToNs == b.ToNs && slices.Equal(a.Topics, b.Topics) &&
		slices.Equal(a.Exclude, b.Exclude) && a.AroundTrigger == b.AroundTrigger && a.Part == b.Part &&
		a.Messages == b.Messages && slices.Equal(a.DroppedTopics, b.DroppedTopics) && a.DroppedTriggers == b.DroppedTriggers
}

// TestRewriteKeepsMCAPSchemas: a cut of another writer's MCAP file to MCAP
// keeps each kept channel's message encoding, schema and metadata.
func TestRewriteKeepsMCAPSchemas(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.mcap")
	f, _ := os.Create(in)
	w, err := mcap.NewWriter(f, mcap.Options{Library: "other"})
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := w.AddSchema("pkg.Pose", "jsonschema", []byte(`{"type":"object"}`))
	pose, _ := w.AddChannel(sid, "/pose", "json", map[string]string{"frame": "map"})
	raw, _ := w.AddChannel(0, "/raw", "x-raw", nil)
	for i := range 20 {
		w.WriteMessage(&mcap.Message{ChannelID: pose, LogTime: uint64(r0 + int64(i)*1e6), PublishTime: uint64(r0 + int64(i)*1e6), Data: []byte(`{"x":1}`)})
		w.WriteMessage(&mcap.Message{ChannelID: raw, LogTime: uint64(r0 + int64(i)*1e6), PublishTime: uint64(r0), Data: []byte{1}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "out.mcap")
	tp, _ := filter.ParseTopics("", "/raw")
	if _, err := Rewrite([]*Source{openOne(t, in)}, Output{Path: out}, RewriteOptions{Format: FormatMCAP, Topics: TopicFilter(tp)}); err != nil {
		t.Fatal(err)
	}
	r, err := mcap.Open(out, mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Channels) != 1 || info.Channels[0].Topic != "/pose" || info.Channels[0].MessageEncoding != "json" ||
		info.Channels[0].Metadata["frame"] != "map" || info.Channels[0].Schema == nil ||
		info.Channels[0].Schema.Name != "pkg.Pose" || info.Channels[0].Schema.Encoding != "jsonschema" ||
		string(info.Channels[0].Schema.Data) != `{"type":"object"}` || info.Messages != 20 {
		t.Errorf("channels %+v", info.Channels)
	}
}

// TestRewriteSplitAndEmpty: a split by size makes parts near the size that
// hold every message once; a cut keeping nothing is ErrEmpty and leaves no
// file; an existing output is refused.
func TestRewriteSplitAndEmpty(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pack")
	writeRewriteInput(t, in)
	out := filepath.Join(dir, "p.pack")
	rep, err := Rewrite([]*Source{openOne(t, in)}, Output{Path: out}, RewriteOptions{Split: Split{Size: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for i, p := range rep.Parts {
		if p.Path != PartPath(out, i+1) || p.Size > 2000+1500 {
			t.Errorf("part %d: %+v", i+1, p)
		}
		n += p.Messages
	}
	if len(rep.Parts) < 3 || n != 140 {
		t.Errorf("%d parts, %d messages", len(rep.Parts), n)
	}
	tp, _ := filter.ParseTopics("a", "")
	empty := filepath.Join(dir, "e.pack")
	_, err = Rewrite([]*Source{openOne(t, in)}, Output{Path: empty}, RewriteOptions{Topics: TopicFilter(tp), Window: &Window{FromNs: r0 + 5e6, ToNs: r0 + 6e6}})
	if !errors.Is(err, ErrEmpty) {
		t.Errorf("empty cut: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "e.pack*")); len(left) != 0 {
		t.Errorf("empty cut left %v", left)
	}
	if _, err := Rewrite([]*Source{openOne(t, in)}, Output{Path: in}, RewriteOptions{}); err == nil {
		t.Error("overwrote the input")
	}
}
