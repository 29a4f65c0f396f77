package report

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/schema"
)

// Defaults and bounds of the analysis. Each is documented in
// docs/report.md.
const (
	// DefaultColumns is the number of pixel columns a signal plot is
	// downsampled to (first, min, max and last sample per column).
	DefaultColumns = 1200
	// DefaultBins is the number of rate bins of a timeline lane.
	DefaultBins = 300
	// DefaultThumbs is the number of thumbnails per camera topic.
	DefaultThumbs = 9
	// DefaultThumbWidth is a thumbnail's width in pixels (its height
	// follows the picture's aspect, at most the same).
	DefaultThumbWidth = 240
	// MaxSignals bounds the plotted fields over all topics; fields past
	// it are listed in Report.Notes.
	MaxSignals = 256
	// MaxCameras bounds the camera topics shown.
	MaxCameras = 16
	// MaxGaps is how many of a topic's largest gaps are kept.
	MaxGaps = 8
	// MaxValueSamples: a field with at most this many samples (a latched
	// or single-sample topic: a calibration, a configuration) is shown as
	// values, not as a chart (Signal.Values).
	MaxValueSamples = 4
	// GapFactor: an interval longer than GapFactor times the topic's
	// median interval is a gap.
	GapFactor = 3
	// MaxFrameBytes is the largest camera message kept for a thumbnail;
	// MaxRetainedFrameBytes bounds the bytes of all kept frames together.
	MaxFrameBytes         = 16 << 20
	MaxRetainedFrameBytes = 96 << 20
)

// Options tune an analysis. The zero value gives the defaults.
type Options struct {
	Title string
	// Columns, Bins, Thumbs, ThumbWidth: 0 gives the Default*.
	Columns, Bins, Thumbs, ThumbWidth int
	// Fields selects the plotted fields ("TOPIC" or "TOPIC:PATH", TOPIC
	// a glob over topic names, PATH a concrete field path such as
	// "wheel[2]"); none: every numeric field of every decoded topic.
	Fields []string
	// Schemas gives topics (by name or name#channel) a type, overriding
	// what the dump says (--schema).
	Schemas map[string]schema.Type
	// VideoDecoder is the ffmpeg program used to decode video key frames
	// for thumbnails; "" leaves video frames as placeholders.
	VideoDecoder string
	// Live marks the live recorder's page.
	Live bool
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.Columns <= 0 {
		c.Columns = DefaultColumns
	}
	if c.Bins <= 0 {
		c.Bins = DefaultBins
	}
	if c.Thumbs <= 0 {
		c.Thumbs = DefaultThumbs
	}
	if c.ThumbWidth <= 0 {
		c.ThumbWidth = DefaultThumbWidth
	}
	return c
}

// fieldSel is one parsed --fields entry.
type fieldSel struct {
	topic string // glob
	field string // "" = every field
}

// ParseFields checks --fields entries: "TOPIC" or "TOPIC:PATH", TOPIC a
// path.Match glob.
func ParseFields(list []string) error {
	_, err := parseFields(list)
	return err
}

func parseFields(list []string) ([]fieldSel, error) {
	var out []fieldSel
	for _, s := range list {
		topic, field, _ := strings.Cut(s, ":")
		if topic == "" {
			return nil, fmt.Errorf("%w: --fields %q: want TOPIC or TOPIC:PATH", ErrUsage, s)
		}
		if _, err := path.Match(topic, ""); err != nil {
			return nil, fmt.Errorf("%w: --fields %q: bad topic glob: %v", ErrUsage, s, err)
		}
		out = append(out, fieldSel{topic, field})
	}
	return out, nil
}

// TopicSpec describes a topic to an Analyzer.
type TopicSpec struct {
	// Name is "name" or "name#channel".
	Name string
	// Type is the type name as recorded (display only).
	Type string
	// Schema is the topic's type, when known (HasSchema); SchemaFrom
	// says where it came from ("the dump", "--schema").
	Schema     schema.Type
	HasSchema  bool
	SchemaFrom string
	// Account is the dump's accounting for the topic, when it has one.
	Account *Accounting
	// AskedFromNs and AskedToNs are the window the dump says was asked
	// for the topic; 0: the triggers' windows.
	AskedFromNs, AskedToNs int64
}

// Analyzer builds a Report from messages fed topic by topic: each topic's
// messages in capture-time order, topics interleaved in any way. Its
// memory is bounded by the options (columns, bins, thumbnails) and the
// number of topics, not by the messages. An Analyzer is not safe for
// concurrent use.
type Analyzer struct {
	o          Options
	sel        []fieldSel
	start, end int64
	triggers   []dumpinfo.Trigger
	topics     []*topicState
	series     []*series
	cameras    int
	retained   int // bytes of camera frames kept
	notes      []string
	slots      []thumbSlot     // the camera strip's thumbnail slots
	schemaUsed map[string]bool // the topics of Options.Schemas a topic took
}

// NewAnalyzer starts an analysis of [startNs, endNs] (the time axis of
// every plot) for the given triggers.
func NewAnalyzer(o Options, startNs, endNs int64, triggers []dumpinfo.Trigger) (*Analyzer, error) {
	if endNs < startNs {
		return nil, fmt.Errorf("%w: empty time range (%d > %d)", ErrUsage, startNs, endNs)
	}
	sel, err := parseFields(o.Fields)
	if err != nil {
		return nil, err
	}
	a := &Analyzer{o: o.withDefaults(), sel: sel, start: startNs, end: endNs,
		triggers: append([]dumpinfo.Trigger{}, triggers...), schemaUsed: map[string]bool{}}
	a.slots = a.thumbSlots()
	return a, nil
}

// focus is the time the camera strip centres on: the first trigger, else
// the end of a live window, else the start.
func (a *Analyzer) focus() int64 {
	if len(a.triggers) > 0 {
		t := a.triggers[0].TimeNs
		for _, tr := range a.triggers {
			t = min(t, tr.TimeNs)
		}
		return min(max(t, a.start), a.end)
	}
	if a.o.Live {
		return a.end
	}
	return a.start
}

// thumbTargets spreads n times over [start, end] with one exactly at
// focus: as many on each side as its share of the range.
func thumbTargets(start, end, focus int64, n int) []int64 {
	if n <= 1 || end <= start {
		return []int64{focus}
	}
	left := int(float64(n-1)*float64(focus-start)/float64(end-start) + 0.5)
	right := n - 1 - left
	out := make([]int64, 0, n)
	for i := left; i >= 1; i-- {
		out = append(out, focus-int64(float64(focus-start)*float64(i)/float64(left)))
	}
	out = append(out, focus)
	for i := 1; i <= right; i++ {
		out = append(out, focus+int64(float64(end-focus)*float64(i)/float64(right)))
	}
	return out
}

// topicState is one topic's running analysis.
type topicState struct {
	spec        TopicSpec
	a           *Analyzer
	n, bytes    uint64
	first, last int64
	prevGen     int64
	binNs       int64
	binScale    float64 // bins per ns (1/binNs)
	bins        []uint32
	interval    Hist
	latency     SignedHist
	ooo, back   uint64
	gaps        [MaxGaps]Gap
	ngaps       int
	smallGap    int // index of the smallest kept gap once MaxGaps are kept
	decoded     string

	// numeric fields: accessors for packed layouts, else Numeric with
	// paths looked up in byPath
	accs    []fieldAccessor
	dec     schema.Decoder
	byPath  map[string]int // concrete path -> index in a.series, -1 = not plotted
	numeric []string       // numeric field paths seen (at most maxNamed), for a --fields that plots nothing
	numFn   func(path []byte, v float64)
	curT    int64
	decErrs uint64

	cam *camState
}

type fieldAccessor struct {
	acc    *schema.Accessor
	series *series
}

// Topic adds a topic and returns its id for Message.
func (a *Analyzer) Topic(spec TopicSpec) int {
	ts := &topicState{spec: spec, a: a}
	ts.binNs = max((a.end-a.start+int64(a.o.Bins)-1)/int64(a.o.Bins), 1)
	ts.bins = make([]uint32, int((a.end-a.start)/ts.binNs)+1)
	ts.binScale = 1 / float64(ts.binNs)
	typ, has, from := spec.Schema, spec.HasSchema, spec.SchemaFrom
	if t, ok := a.o.Schemas[spec.Name]; ok {
		typ, has, from = t, true, "--schema"
		a.schemaUsed[spec.Name] = true
	} else if name, _, ok := strings.Cut(spec.Name, "#"); ok {
		if t, ok := a.o.Schemas[name]; ok {
			typ, has, from = t, true, "--schema"
			a.schemaUsed[name] = true
		}
	}
	if has {
		ts.setup(typ, from)
	}
	a.topics = append(a.topics, ts)
	return len(a.topics) - 1
}

// setup prepares decoding: a camera, or numeric fields.
func (ts *topicState) setup(typ schema.Type, from string) {
	a := ts.a
	if kind := cameraKind(typ); kind != "" {
		if a.cameras >= MaxCameras {
			a.notef("%s: not shown in the camera strip (more than %d camera topics)", ts.spec.Name, MaxCameras)
			return
		}
		a.cameras++
		ts.cam = newCamState(kind, a.slots)
		ts.decoded = fmt.Sprintf("%s from %s", typ.Schema.Name, from)
		return
	}
	dec, err := schema.NewDecoder(typ)
	if err != nil {
		a.notef("%s: not decoded: %v", ts.spec.Name, err)
		return
	}
	ts.decoded = fmt.Sprintf("%s from %s", typ.MessageEncoding, from)
	if !a.plotsTopic(ts.spec.Name) {
		return
	}
	fields := dec.Fields()
	if layout, ok := dec.(*schema.Layout); ok {
		// Packed structs: one Accessor per concrete field, no allocation.
		for _, f := range fields {
			if !f.Kind.Numeric() {
				continue
			}
			paths, fixed := expandPath(f.Path, f.Dims)
			if !fixed {
				a.notef("%s: field %s not plotted (more than %d elements)", ts.spec.Name, f.Path, MaxSignals)
				continue
			}
			for _, p := range paths {
				ts.sawNumeric(p)
				if !a.plotsField(ts.spec.Name, p) {
					continue
				}
				acc, err := layout.Accessor(p)
				if err != nil {
					a.notef("%s: field %s: %v", ts.spec.Name, p, err)
					continue
				}
				if s := a.newSeries(ts.spec.Name, p, f.Unit); s != nil {
					ts.accs = append(ts.accs, fieldAccessor{acc, s})
				}
			}
		}
		return
	}
	// Protobuf and JSON: walk every numeric leaf; fields are series in
	// the order they first appear (schema order for what Fields lists).
	ts.dec = dec
	ts.byPath = map[string]int{}
	units := map[string]string{}
	for _, f := range fields {
		units[f.Path] = f.Unit
		if paths, fixed := expandPath(f.Path, f.Dims); fixed && f.Kind.Numeric() {
			for _, p := range paths {
				ts.addPath(p, f.Unit)
			}
		}
	}
	ts.numFn = func(p []byte, v float64) {
		i, ok := ts.byPath[string(p)]
		if !ok {
			i = ts.addPath(string(p), units[genericPath(string(p))])
		}
		if i >= 0 {
			ts.a.series[i].add(ts.curT, v)
		}
	}
}

// addPath registers a concrete path of a Numeric-decoded topic and returns
// its series index, or -1 when it is not plotted.
func (ts *topicState) addPath(p, unit string) int {
	ts.sawNumeric(p)
	i := -1
	if ts.a.plotsField(ts.spec.Name, p) {
		if s := ts.a.newSeries(ts.spec.Name, p, unit); s != nil {
			i = len(ts.a.series) - 1
		}
	}
	if len(ts.byPath) < 4*MaxSignals { // unplotted paths are remembered too, up to a bound
		ts.byPath[p] = i
	}
	return i
}

// maxNamed bounds the names a note lists.
const maxNamed = 20

// sawNumeric remembers a numeric field path of the topic (the first
// maxNamed), for the note on a --fields entry that plots nothing.
func (ts *topicState) sawNumeric(p string) {
	if len(ts.numeric) < maxNamed {
		ts.numeric = append(ts.numeric, p)
	}
}

// unmatched is a note for each option that names what the dumps do not
// hold (a typo would otherwise give a report without it, silently): an
// Options.Fields entry that plots nothing (no topic matches it, or the
// topics it matches have no such numeric field), an Options.Schemas topic
// that is not there.
func (a *Analyzer) unmatched() []string {
	var out, all []string
	for _, ts := range a.topics {
		if len(all) < maxNamed {
			all = append(all, ts.spec.Name)
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(a.o.Schemas)) {
		if !a.schemaUsed[topic] {
			out = append(out, fmt.Sprintf("--schema %s: no such topic, not used (the topics: %s)", topic, strings.Join(all, ", ")))
		}
	}
	for i, sel := range a.sel {
		plotted := false
		for _, s := range a.series {
			plotted = plotted || matchTopic(sel.topic, s.topic) && (sel.field == "" || sel.field == s.field)
		}
		if plotted {
			continue
		}
		var topics, fields, undecoded []string
		for _, ts := range a.topics {
			if matchTopic(sel.topic, ts.spec.Name) {
				topics = append(topics, ts.spec.Name)
				fields = append(fields, ts.numeric...)
				if ts.decoded == "" {
					undecoded = append(undecoded, ts.spec.Name)
				}
			}
		}
		var why string
		switch {
		case len(topics) > 0 && len(undecoded) == len(topics):
			why = fmt.Sprintf("%s not decoded (no schema in the dump: --schema TOPIC=FILE gives one)", strings.Join(topics, ", "))
		case len(topics) == 0:
			why = fmt.Sprintf("no topic matches %s (the topics: %s)", sel.topic, strings.Join(all, ", "))
		case sel.field == "":
			why = fmt.Sprintf("no numeric field decoded in %s", strings.Join(topics, ", "))
		default:
			why = fmt.Sprintf("no numeric field %s in %s (numeric fields: %s)", sel.field, strings.Join(topics, ", "), strings.Join(fields[:min(len(fields), maxNamed)], ", "))
		}
		out = append(out, fmt.Sprintf("--fields %s plots nothing: %s", a.o.Fields[i], why))
	}
	return out
}

// genericPath turns "a[2].b[0]" into "a[].b[]" (how Fields spells it).
func genericPath(p string) string {
	if !strings.Contains(p, "[") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		b.WriteByte(p[i])
		if p[i] == '[' && i+1 < len(p) && p[i+1] >= '0' && p[i+1] <= '9' {
			for i+1 < len(p) && p[i+1] != ']' {
				i++
			}
		}
	}
	return b.String()
}

// expandPath turns a Fields path with "[]" into the concrete paths, when
// every dimension is fixed (and the product is at most MaxSignals).
func expandPath(p string, dims []int) ([]string, bool) {
	paths := []string{""}
	rest := p
	for _, d := range dims {
		i := strings.Index(rest, "[]")
		if i < 0 || d < 0 || len(paths)*d > MaxSignals {
			return nil, false
		}
		var next []string
		for _, q := range paths {
			for k := 0; k < d; k++ {
				next = append(next, q+rest[:i]+"["+strconv.Itoa(k)+"]")
			}
		}
		paths, rest = next, rest[i+2:]
	}
	if strings.Contains(rest, "[]") || strings.Contains(rest, ".*") {
		return nil, false
	}
	for i := range paths {
		paths[i] += rest
	}
	return paths, true
}

func (a *Analyzer) plotsTopic(topic string) bool {
	if len(a.sel) == 0 {
		return true
	}
	for _, s := range a.sel {
		if matchTopic(s.topic, topic) {
			return true
		}
	}
	return false
}

func (a *Analyzer) plotsField(topic, field string) bool {
	if len(a.sel) == 0 {
		return true
	}
	for _, s := range a.sel {
		if matchTopic(s.topic, topic) && (s.field == "" || s.field == field) {
			return true
		}
	}
	return false
}

// matchTopic matches a glob against "name#channel" or its name.
func matchTopic(glob, topic string) bool {
	if ok, _ := path.Match(glob, topic); ok {
		return true
	}
	if name, _, cut := strings.Cut(topic, "#"); cut {
		ok, _ := path.Match(glob, name)
		return ok
	}
	return false
}

func (a *Analyzer) newSeries(topic, field, unit string) *series {
	if len(a.series) >= MaxSignals {
		a.notef("%s: field %s not plotted (more than %d fields; choose with --fields)", topic, field, MaxSignals)
		return nil
	}
	s := newSeries(topic, field, unit, a.start, a.end, a.o.Columns)
	for _, sel := range a.sel {
		s.asked = s.asked || sel.field == field && matchTopic(sel.topic, topic)
	}
	a.series = append(a.series, s)
	return s
}

// notef adds a note, at most 100 (then one saying so).
func (a *Analyzer) notef(format string, args ...any) {
	switch {
	case len(a.notes) < 100:
		a.notes = append(a.notes, fmt.Sprintf(format, args...))
	case len(a.notes) == 100:
		a.notes = append(a.notes, "more notes left out")
	}
}

// Message feeds one message of topic id: its capture time, producer time
// (0 = unknown) and payload. data is not kept after the call.
func (a *Analyzer) Message(id int, captureNs, genNs int64, data []byte) {
	ts := a.topics[id]
	ts.n++
	ts.bytes += uint64(len(data))
	if off := captureNs - a.start; off >= 0 {
		// a multiplication instead of a division, corrected to the exact
		// bin at its edges
		b := int64(float64(off) * ts.binScale)
		if (b+1)*ts.binNs <= off {
			b++
		} else if b*ts.binNs > off {
			b--
		}
		if b < int64(len(ts.bins)) {
			ts.bins[b]++
		}
	}
	if ts.n == 1 {
		ts.first = captureNs
	} else {
		iv := captureNs - ts.last
		if iv < 0 {
			ts.back++
		} else {
			ts.interval.Add(iv)
			ts.gap(ts.last, iv)
		}
	}
	if captureNs > ts.last || ts.n == 1 {
		ts.last = captureNs
	}
	if genNs != 0 {
		if captureNs != 0 {
			ts.latency.Add(captureNs - genNs)
		}
		if ts.prevGen != 0 && genNs < ts.prevGen {
			ts.ooo++
		}
		ts.prevGen = genNs
	}
	switch {
	case ts.cam != nil:
		ts.cam.message(a, ts, captureNs, data)
	case ts.accs != nil:
		for i := range ts.accs {
			if v, ok := ts.accs[i].acc.Float64(data); ok {
				ts.accs[i].series.add(captureNs, v)
			}
		}
	case ts.dec != nil:
		ts.curT = captureNs
		if ts.dec.Numeric(data, ts.numFn) != nil {
			ts.decErrs++
		}
	}
}

// MinPerBin is the average number of messages a timeline bin holds at
// least: bins of a slow topic are merged (by whole groups of the fine
// bins) until it does, so its lane shows a rate rather than a comb; but
// into no fewer than MinBins bins, so a handful of messages still shows
// where they are.
const (
	MinPerBin = 4
	MinBins   = 50
)

// mergeBins groups k consecutive bins so that there are on average at
// least MinPerBin messages per bin, and at least MinBins bins.
func mergeBins(binNs int64, bins []uint32, n uint64) (int64, []uint32) {
	if n == 0 || uint64(len(bins))*MinPerBin <= n {
		return binNs, bins
	}
	k := min(int((uint64(len(bins))*MinPerBin+n-1)/n), max(len(bins)/MinBins, 1))
	if k <= 1 {
		return binNs, bins
	}
	out := make([]uint32, (len(bins)+k-1)/k)
	for i, c := range bins {
		out[i/k] += c
	}
	return binNs * int64(k), out
}

// gap keeps the MaxGaps largest intervals. Most intervals are not larger
// than the smallest kept one: one comparison.
func (ts *topicState) gap(at, iv int64) {
	if ts.ngaps == MaxGaps {
		if iv <= ts.gaps[ts.smallGap].DurationNs {
			return
		}
		ts.gaps[ts.smallGap] = Gap{at, iv}
	} else {
		ts.gaps[ts.ngaps] = Gap{at, iv}
		ts.ngaps++
		if ts.ngaps < MaxGaps {
			return
		}
	}
	ts.smallGap = 0
	for i := 1; i < MaxGaps; i++ {
		if ts.gaps[i].DurationNs < ts.gaps[ts.smallGap].DurationNs {
			ts.smallGap = i
		}
	}
}

func dist(h *Hist) Dist {
	return Dist{Count: h.Count(), Min: h.Min(), P50: h.Quantile(0.5), P99: h.Quantile(0.99), Max: h.Max(), Mean: h.Mean()}
}

func signedDist(h *SignedHist) Dist {
	return Dist{Count: h.Count(), Min: h.Min(), P50: h.Quantile(0.5), P99: h.Quantile(0.99), Max: h.Max(), Mean: h.Mean()}
}

// timing computes the topic's Timing.
func (ts *topicState) timing() Timing {
	t := Timing{Interval: dist(&ts.interval), Latency: signedDist(&ts.latency), OutOfOrder: ts.ooo, CaptureBackwards: ts.back}
	if ts.n > 1 && ts.last > ts.first {
		t.RateHz = float64(ts.n-1) / (float64(ts.last-ts.first) / 1e9)
	}
	// jitter: |interval - median| over the interval buckets
	med := t.Interval.P50
	var jit Hist
	ts.interval.each(func(v int64, n uint64) {
		d := v - med
		if d < 0 {
			d = -d
		}
		jit.AddN(d, n)
	})
	t.Jitter = dist(&jit)
	if ts.interval.Count() > 0 {
		// the extremes are exact
		t.Jitter.Max = max(ts.interval.Max()-med, med-ts.interval.Min())
	}
	for _, g := range ts.gaps[:ts.ngaps] {
		if g.DurationNs > t.LargestGapNs || g.DurationNs == t.LargestGapNs && g.AtNs < t.LargestGapAtNs {
			t.LargestGapNs, t.LargestGapAtNs = g.DurationNs, g.AtNs
		}
	}
	return t
}

// rateWithinWindows takes out of a topic's rate the gaps (of those kept,
// MaxGaps) whose middle lies outside every trigger's window: time between
// the windows of a merge of dumps, when nothing was recorded.
func (a *Analyzer) rateWithinWindows(ts *topicState, t *Timing) {
	var n uint64
	var ns int64
	for _, g := range ts.gaps[:ts.ngaps] {
		mid, inside, known := g.AtNs+g.DurationNs/2, false, false
		for i := range a.triggers {
			if from, to, _, _, ok := a.triggers[i].Window(); ok {
				known = true
				inside = inside || mid >= from && mid <= to
			}
		}
		if known && !inside {
			n++
			ns += g.DurationNs
		}
	}
	if n == 0 || ts.n-1 <= n || ts.last-ts.first-ns <= 0 {
		return
	}
	t.RateHz = float64(ts.n-1-n) / (float64(ts.last-ts.first-ns) / 1e9)
	t.BetweenWindowsNs = ns
}

// Report finishes the analysis. It decodes the kept camera frames into
// thumbnails; call it once.
func (a *Analyzer) Report() *Report {
	r := &Report{Version: Version, Title: a.o.Title, Live: a.o.Live, StartNs: a.start, EndNs: a.end, FocusNs: a.focus(),
		Files: []File{}, Triggers: a.triggers, Topics: []Topic{}, Signals: []Signal{}, Cameras: []Camera{}}
	asked := [2]int64{}
	for i := range a.triggers {
		lo, hi, _, _, ok := a.triggers[i].Window()
		if !ok {
			continue
		}
		if asked == [2]int64{} || lo < asked[0] {
			asked[0] = lo
		}
		if asked == [2]int64{} || hi > asked[1] {
			asked[1] = hi
		}
	}
	order := make([]int, len(a.topics))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a.topics[order[i]].spec.Name < a.topics[order[j]].spec.Name })
	for _, i := range order {
		ts := a.topics[i]
		t := Topic{Name: ts.spec.Name, Type: ts.spec.Type, Decoded: ts.decoded, Messages: ts.n, Bytes: ts.bytes,
			AskedFromNs: asked[0], AskedToNs: asked[1], Timing: ts.timing()}
		a.rateWithinWindows(ts, &t.Timing)
		if ts.spec.AskedToNs > ts.spec.AskedFromNs {
			t.AskedFromNs, t.AskedToNs = ts.spec.AskedFromNs, ts.spec.AskedToNs
		}
		t.BinNs, t.Bins = mergeBins(ts.binNs, ts.bins, ts.n)
		if ts.n > 0 {
			t.FirstNs, t.LastNs = ts.first, ts.last
		}
		thr := max(GapFactor*t.Timing.Interval.P50, 1)
		gaps := slices.Clone(ts.gaps[:ts.ngaps])
		sort.Slice(gaps, func(i, j int) bool {
			if gaps[i].DurationNs != gaps[j].DurationNs {
				return gaps[i].DurationNs > gaps[j].DurationNs
			}
			return gaps[i].AtNs < gaps[j].AtNs
		})
		for _, g := range gaps {
			if g.DurationNs > thr {
				t.Gaps = append(t.Gaps, g)
			}
		}
		if ts.spec.Account != nil {
			t.Accounting = *ts.spec.Account
		} else {
			t.Accounting = Accounting{Messages: ts.n, Bytes: ts.bytes}
		}
		if ts.decErrs > 0 {
			a.notef("%s: %d messages did not decode with the topic's schema", ts.spec.Name, ts.decErrs)
		}
		r.Topics = append(r.Topics, t)
	}
	// signals grouped by topic, the triggers' own topics (a rule's "topic"
	// parameter) first, then in report order; fields in the order added
	rank := map[string]int{}
	for k, i := range order {
		rank[a.topics[i].spec.Name] = k + len(a.triggers)
	}
	for k := len(a.triggers) - 1; k >= 0; k-- {
		if tp := a.triggers[k].Params["topic"]; tp != "" {
			if _, ok := rank[tp]; ok {
				rank[tp] = k
			}
		}
	}
	gapNs := map[string]int64{} // per topic: the interval past which a line breaks
	for _, t := range r.Topics {
		if t.Timing.Interval.Count >= 2 {
			gapNs[t.Name] = max(GapFactor*t.Timing.Interval.P50, 1)
		}
	}
	ss := slices.Clone(a.series)
	sort.SliceStable(ss, func(i, j int) bool { return rank[ss[i].topic] < rank[ss[j].topic] })
	for _, s := range ss {
		if s.isCounter() && s.n > MaxValueSamples && !s.asked {
			a.notef("%s: field %s only counts (each sample one more than the last: a sequence number), not plotted; --fields '%s:%s' plots it",
				s.topic, s.field, s.topic, s.field)
			continue
		}
		sig := s.signal(gapNs[s.topic])
		sig.Values = s.n <= MaxValueSamples
		r.Signals = append(r.Signals, sig)
	}
	for _, i := range order {
		if ts := a.topics[i]; ts.cam != nil {
			r.Cameras = append(r.Cameras, ts.cam.camera(a, ts.spec.Name))
		}
	}
	r.Unmatched = a.unmatched()
	r.Notes = append(a.notes, r.Unmatched...)
	return r
}
