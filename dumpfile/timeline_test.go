package dumpfile

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// readAll reads what an Iterator gives, copied.
func readAll(t *testing.T, it *Iterator) []msg {
	t.Helper()
	var out []msg
	for {
		m, err := it.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg{it.m.Source(), m.Name, m.Channel, m.GenNs, m.DoneNs, m.TimeNs, bytes.Clone(m.Meta), bytes.Clone(m.Data),
			m.Meta != nil, m.Data != nil})
	}
}

func messagesOf(t *testing.T, tl *Timeline, opts ...ReadOption) []msg {
	t.Helper()
	it, err := tl.Messages(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, it)
}

// TestTimelineFilters: the topic and time options keep exactly what the
// filter verbs' selection keeps of the merge (TopicFilter, both ends
// included), for every combination and window, over a pack dump and an
// MCAP one merged.
func TestTimelineFilters(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	writeRichPack(t, b, 1005, "b")
	tl, err := OpenTimeline(a, exportToMCAP(t, b, mcap.CompressionZstd))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	all := streamAll(t, tl.Sources()...)
	if len(all) != 120 {
		t.Fatalf("%d messages, want 120", len(all))
	}
	for _, tc := range []struct {
		opts     []ReadOption
		sel      TopicFilter
		from, to int64
	}{
		{nil, TopicFilter{}, -1 << 63, 1<<63 - 1},
		{[]ReadOption{WithTopics("cam")}, TopicFilter{Include: []string{"cam"}}, -1 << 63, 1<<63 - 1},
		{[]ReadOption{WithTopics("cam#front")}, TopicFilter{Include: []string{"cam#front"}}, -1 << 63, 1<<63 - 1},
		{[]ReadOption{WithTopics("c*"), WithTopics("speed"), WithoutTopics("cam")}, TopicFilter{Include: []string{"c*", "speed"}, Exclude: []string{"cam"}}, -1 << 63, 1<<63 - 1},
		{[]ReadOption{From(1100), To(1200)}, TopicFilter{}, 1100, 1200},
		{[]ReadOption{From(1105), To(1105), WithTopics("speed")}, TopicFilter{Include: []string{"speed"}}, 1105, 1105},
		{[]ReadOption{To(0)}, TopicFilter{}, -1 << 63, 0},
		{[]ReadOption{From(5000)}, TopicFilter{}, 5000, 1<<63 - 1},
	} {
		var want []msg
		for _, m := range all {
			if m.time >= tc.from && m.time <= tc.to && tc.sel.MatchName(m.name, m.channel) {
				want = append(want, m)
			}
		}
		sameStream(t, "filtered", messagesOf(t, tl, tc.opts...), want)
	}
	for _, bad := range []struct {
		opt  ReadOption
		want string
	}{
		{WithTopics("a[b"), `WithTopics: glob "a[b"`},
		{WithoutTopics("x", "[", "y"), `WithoutTopics: glob "["`},
		{SkipDamaged(nil), "SkipDamaged: report is nil"},
	} {
		if _, err := tl.Messages(bad.opt); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("option error %v, want %q", err, bad.want)
		}
	}
	if _, err := tl.Messages(From(10), To(9)); err == nil || !strings.Contains(err.Error(), "To(9) is before From(10)") {
		t.Errorf("To before From: %v", err)
	}
}

// TestTimelineSeekExact: after SeekTime(ns) the iterator gives exactly the
// selected messages at or after max(ns, From), at random points of a merge
// of pack (small frames) and MCAP (small chunks) dumps, forwards and back.
func TestTimelineSeekExact(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	writeRichPack(t, b, 1003, "b")
	tl, err := OpenTimeline(a, exportToMCAP(t, b, mcap.CompressionLZ4))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	all := messagesOf(t, tl)
	it, err := tl.Messages(From(1050), WithTopics("speed"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		ns := 990 + r.Int64N(330)
		if err := it.SeekTime(ns); err != nil {
			t.Fatal(err)
		}
		var want []msg
		for _, m := range all {
			if m.time >= max(ns, 1050) && m.name == "speed" {
				want = append(want, m)
			}
		}
		sameStream(t, "after SeekTime", readAll(t, it), want)
		if _, err := it.Next(); err != io.EOF {
			t.Fatalf("Next after the end: %v, want io.EOF", err)
		}
	}
}

// TestTimelineTopics: the topics of every file once, counts summed, types
// in order.
func TestTimelineTopics(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	w, err := pack.Create(b, pack.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	typ := ingest.Packed("S", "f32le speed")
	if err := w.SetTopicType("speed", "", typ, 1); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"speed", "new"} {
		if err := w.Add(topic, "", nil, 0, 5, []byte{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl, err := OpenTimeline(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	var got []string
	for _, tp := range tl.Topics() {
		var types []string
		for _, ts := range tp.Types {
			types = append(types, ts.Type.String())
		}
		got = append(got, tp.String()+" "+strings.Join(types, ",")+" "+string(rune('0'+tp.Messages%10)))
	}
	want := []string{"cam#front x-edr-raw img 0", "speed x-edr-raw f32,x-edr-packed S 1", "new x-edr-raw 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Topics:\n got %q\nwant %q", got, want)
	}
	if tl.Topics()[1].Messages != 41 {
		t.Errorf("speed: %d messages, want 41", tl.Topics()[1].Messages)
	}
}

// writeFramedPack writes 60 messages of two topics, times from t0 step 10,
// three messages to a frame.
func writeFramedPack(t *testing.T, path string, t0 int64) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test", TargetFrameSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		name := "speed"
		if i%3 == 1 {
			name = "cam"
		}
		if err := w.Add(name, "", nil, 0, t0+int64(i)*10, bytes.Repeat([]byte{byte(i)}, 8)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// flipFrame changes a byte inside the data of frame k of the pack file at
// path and returns the frame's offset.
func flipFrame(t *testing.T, path string, k int) int64 {
	t.Helper()
	r, err := pack.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	r.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[(offs[k]+offs[k+1])/2] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return offs[k]
}

// TestTimelineSkipDamaged: a damaged frame ends the iteration with an
// error naming the file and its offset; with SkipDamaged it is reported
// (file, offset, where reading went on) and every other message of the
// file comes, and the other files too. A pack file cut short loses what
// follows the cut, reported, while the other file goes on.
func TestTimelineSkipDamaged(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeFramedPack(t, a, 1000)
	writeFramedPack(t, b, 1005)
	tl, err := OpenTimeline(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := messagesOf(t, tl)
	tl.Close()
	// the messages of frame 3 of a, by their offsets
	r, err := pack.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	var inFrame3 int
	var f pack.Frame
	for i := 0; ; i++ {
		if err := r.ReadMetaInto(&f); err != nil {
			break
		}
		if i == 3 {
			inFrame3 = f.Len()
		}
	}
	r.Close()
	bad := flipFrame(t, a, 3)

	tl, err = OpenTimeline(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	it, _ := tl.Messages()
	var err2 error
	for err2 == nil {
		_, err2 = it.Next()
	}
	var ce *pack.CorruptError
	if !errors.As(err2, &ce) || ce.Offset < bad || ce.Offset >= offs[4] || !strings.Contains(err2.Error(), a) {
		t.Fatalf("without SkipDamaged: %v, want a CorruptError in the frame at %d naming %s", err2, bad, a)
	}
	if _, again := it.Next(); again != err2 {
		t.Errorf("Next after the error: %v, want the same error", again)
	}

	var skips []*SkipError
	got := messagesOf(t, tl, SkipDamaged(func(e *SkipError) { skips = append(skips, e) }))
	if len(skips) != 1 || skips[0].Path != a || skips[0].Offset != bad || skips[0].ResumeAt != offs[4] || skips[0].Frames != 1 ||
		!errors.As(skips[0], &ce) {
		t.Fatalf("skips %+v, want one at %d resuming at %d", skips, bad, offs[4])
	}
	if len(got) != len(want)-inFrame3 || inFrame3 == 0 {
		t.Fatalf("%d messages, want %d (%d in the damaged frame)", len(got), len(want)-inFrame3, inFrame3)
	}
	if !strings.Contains(skips[0].Error(), a) || !strings.Contains(skips[0].Error(), "skipped to offset") {
		t.Errorf("SkipError: %v", skips[0])
	}

	// without its index (cut after frame 18), a reads past frame 3 all the
	// same: the pack reader resynchronises on the next intact frame
	dmg, _ := os.ReadFile(a)
	noIndex := filepath.Join(dir, "noindex.pack")
	if err := os.WriteFile(noIndex, dmg[:offs[19]], 0o644); err != nil {
		t.Fatal(err)
	}
	tn, err := OpenTimeline(noIndex)
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	skips = nil
	got = messagesOf(t, tn, SkipDamaged(func(e *SkipError) { skips = append(skips, e) }))
	if len(skips) != 1 || skips[0].Offset != bad || skips[0].ResumeAt != offs[4] || len(got) != 57-inFrame3 {
		t.Errorf("without an index: %d messages (want %d), skips %v", len(got), 57-inFrame3, skips)
	}

	// cut inside frame 5: no index; the rest of a is lost, b goes on
	whole, _ := os.ReadFile(b)
	c := filepath.Join(dir, "c.pack")
	if err := os.WriteFile(c, whole[:(offs[5]+offs[6])/2], 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err := OpenTimeline(c, a)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	skips = nil
	got = messagesOf(t, tc, SkipDamaged(func(e *SkipError) { skips = append(skips, e) }))
	if len(skips) != 2 {
		t.Fatalf("skips %v, want the cut of c and the frame of a", skips)
	}
	for _, s := range skips {
		switch s.Path {
		case c:
			if s.ResumeAt != -1 || !strings.Contains(s.Error(), "the rest of the file left out") {
				t.Errorf("cut file: %v", s)
			}
		case a:
			if s.ResumeAt != offs[4] {
				t.Errorf("damaged frame: %v", s)
			}
		default:
			t.Errorf("skip of %s", s.Path)
		}
	}
	fromA := 0
	for _, m := range got {
		if m.src == 1 {
			fromA++
		}
	}
	if fromA != 60-inFrame3 {
		t.Errorf("%d messages of a after the cut of c, want %d", fromA, 60-inFrame3)
	}
}

// TestOpenJSONL: a JSON-lines export opens as the dump it was exported
// from (messages, topics, types), alone or in a timeline, and ReadInfo
// and Walk read it; verify and recover say what it is.
func TestOpenJSONL(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeRichPack(t, p, 1000, "a")
	src := openSource(t, p)
	j := filepath.Join(dir, "a.jsonl")
	f, err := os.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(src, FormatJSONL, f, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fm, err := Detect(j); err != nil || fm != FormatJSONL {
		t.Fatalf("Detect: %q, %v", fm, err)
	}
	js := openSource(t, j)
	if js.Format != FormatJSONL || js.Path != j || len(js.Topics()) != 2 {
		t.Errorf("source: %s %s %+v", js.Format, js.Path, js.Topics())
	}
	sameStream(t, "JSON lines", streamAll(t, js), streamAll(t, src))
	in, err := ReadInfo(j)
	if err != nil || in.Format != FormatJSONL || in.Messages != 60 || len(in.Triggers) != 1 || in.Path != j {
		t.Errorf("ReadInfo: %+v, %v", in, err)
	}
	n := 0
	if err := Walk(j, func(m *Msg) error { n++; return nil }); err != nil || n != 60 {
		t.Errorf("Walk: %d messages, %v", n, err)
	}
	for _, e := range []error{func() error { _, err := Verify(j); return err }(), func() error { _, err := Recover(j, j+".out"); return err }()} {
		if e == nil || !strings.Contains(e.Error(), "not a dump file") {
			t.Errorf("verify/recover: %v", e)
		}
	}
	// a damaged line is an error naming the file and the line; no
	// temporary file is left
	b, _ := os.ReadFile(j)
	lines := strings.SplitAfter(string(b), "\n")
	lines[5] = `{"seq":4,"topic":"speed","ts":"x"}` + "\n"
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644)
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "edr-lite-jsonl-*"))
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("damaged line: %v", err)
	}
	js.Close()
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "edr-lite-jsonl-*"))
	if len(after) > len(before) {
		t.Errorf("temporary files left: %v (before %v)", after, before)
	}
}
