package replay

import (
	"bytes"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/schema"
)

// CheckMode is how a FeedCheck compares an output of the system under test
// with the recorded one (the reference's FeedCheck Exact / Tolerance /
// None).
type CheckMode int

const (
	// CheckExact compares the payload bytes. With a decoder, a difference
	// is reported per numeric field; without one, at the first differing
	// byte.
	CheckExact CheckMode = iota
	// CheckTolerance compares every numeric field (Decoder.Numeric) within
	// Abs + Rel*|recorded|; it needs a decoder (a schema).
	CheckTolerance
	// CheckNone compares the count of outputs, and their timing when
	// Check.Window is set, not their content.
	CheckNone
)

var checkModeNames = [...]string{CheckExact: "exact", CheckTolerance: "tolerance", CheckNone: "none"}

func (m CheckMode) String() string {
	if int(m) < len(checkModeNames) {
		return checkModeNames[m]
	}
	return "CheckMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseCheckMode parses "exact", "tolerance" or "none".
func ParseCheckMode(s string) (CheckMode, error) {
	for i, n := range checkModeNames {
		if s == n {
			return CheckMode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: check %q: want exact, tolerance or none", ErrOptions, s)
}

// Align is how the outputs of a topic are paired with the recorded ones.
type Align int

const (
	// AlignSeq pairs the k-th output with the k-th recorded output.
	AlignSeq Align = iota
	// AlignTime pairs outputs carrying the same producer time (gen_ns):
	// for nodes that stamp an output with the time of the input it
	// answers. Pairs form in order, each message used once.
	AlignTime
	// AlignNearest pairs each recorded output with the unused output
	// nearest to it in replay time (its input step's recorded time plus
	// the latency measured from that input's release), within
	// Check.Window.
	AlignNearest
)

var alignNames = [...]string{AlignSeq: "seq", AlignTime: "time", AlignNearest: "nearest"}

func (a Align) String() string {
	if int(a) < len(alignNames) {
		return alignNames[a]
	}
	return "Align(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlign parses "seq", "time" or "nearest".
func ParseAlign(s string) (Align, error) {
	for i, n := range alignNames {
		if s == n {
			return Align(i), nil
		}
	}
	return 0, fmt.Errorf("%w: align %q: want seq, time or nearest", ErrOptions, s)
}

// Check is the FeedCheck of the expected topics its glob selects.
type Check struct {
	// Topic is a glob over the recorded topic name (or name#channel); ""
	// selects every topic.
	Topic string
	Mode  CheckMode
	// Abs and Rel bound a numeric field's difference under CheckTolerance:
	// |got - recorded| <= Abs + Rel*|recorded|. NaN equals NaN.
	Abs, Rel float64
	// Fields restricts the comparison to these field paths (and what lies
	// under them: "p" covers "p.x" and "p[2]"); empty compares every
	// numeric field.
	Fields []string
	Align  Align
	// Window is, for AlignNearest, how far apart in replay time a pair
	// may be; for CheckNone, when positive, how much an output's latency
	// after its input may differ from the recorded one.
	Window time.Duration
	// Decoder reads the topic's messages (nil: bytes only). Schema says
	// where it came from, for the report.
	Decoder schema.Decoder
	Schema  string
}

func (c *Check) matches(topic string) bool {
	if c.Topic == "" {
		return true
	}
	name, _, _ := strings.Cut(topic, "#")
	ok1, _ := path.Match(c.Topic, topic)
	ok2, _ := path.Match(c.Topic, name)
	return ok1 || ok2
}

func (c *Check) validate() error {
	switch {
	case c.Mode < CheckExact || c.Mode > CheckNone:
		return fmt.Errorf("%w: check mode %d", ErrOptions, c.Mode)
	case c.Align < AlignSeq || c.Align > AlignNearest:
		return fmt.Errorf("%w: align %d", ErrOptions, c.Align)
	case c.Abs < 0 || c.Rel < 0 || math.IsNaN(c.Abs) || math.IsNaN(c.Rel):
		return fmt.Errorf("%w: check %q: tolerances must be 0 or more", ErrOptions, c.Topic)
	case c.Align == AlignNearest && c.Window <= 0:
		return fmt.Errorf("%w: check %q: align nearest needs a window", ErrOptions, c.Topic)
	case c.Window < 0:
		return fmt.Errorf("%w: check %q: negative window", ErrOptions, c.Topic)
	}
	if _, err := path.Match(c.Topic, ""); err != nil {
		return fmt.Errorf("%w: check topic glob %q: %v", ErrOptions, c.Topic, err)
	}
	return nil
}

// Mismatch is one difference between what the system under test published
// and what the recording holds.
type Mismatch struct {
	Topic string `json:"topic"`
	// Kind is "value" (a field or bytes differ), "missing" (recorded, not
	// published), "extra" (published, not recorded) or "timing".
	Kind string `json:"kind"`
	// Seq is the recorded output's index on its topic (counting from 0;
	// the published one's for "extra").
	Seq int `json:"seq"`
	// Step is the input step the output answers: the number of inputs
	// released before it (recorded side; the published side for "extra").
	Step int `json:"step"`
	// TimeNs is the recorded output's message time (for "extra", the
	// published output's replay time); Offset the same from the first
	// replayed message.
	TimeNs int64  `json:"time_ns"`
	Offset string `json:"offset"`
	// Field is a field path, "bytes[N]" (the first differing byte),
	// "length" or "latency"; "" for missing and extra.
	Field    string `json:"field,omitempty"`
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
}

func (m *Mismatch) String() string {
	s := fmt.Sprintf("%s step %d (%s seq %d at %s): %s", m.Topic, m.Step, m.Topic, m.Seq, m.Offset, m.Kind)
	if m.Field != "" {
		s += " " + m.Field
	}
	if m.Expected != "" || m.Got != "" {
		s += fmt.Sprintf(": expected %s, got %s", m.Expected, m.Got)
	}
	return s
}

// recOut is a recorded output of the system under test.
type recOut struct {
	seq    int
	step   int
	timeNs int64
	genNs  int64
	lat    int64 // after its step's input, in message time (-1: before any input)
	data   []byte
}

// pubOut is an output the system under test published during the replay.
type pubOut struct {
	seq    int
	step   int
	timeNs int64 // replay time: its step's recorded time + the latency (scaled by the rate)
	genNs  int64
	lat    int64 // measured from its step's input release, wall clock
	data   []byte
}

// comparer compares one topic's outputs and reports mismatches.
type comparer struct {
	ch      *Check
	topic   string
	firstNs int64
	// endNs is the end of the recording: an unpaired output whose replay
	// time is later is not an extra (its counterpart may lie beyond the
	// dump's window), only counted in afterEnd
	endNs    int64
	afterEnd int
	add      func(Mismatch)
	paired   int
	bad      int
}

func (c *comparer) offset(ns int64) string {
	return "+" + time.Duration(ns-c.firstNs).Round(time.Microsecond).String()
}

func (c *comparer) mismatch(kind string, r *recOut, p *pubOut, field, exp, got string) {
	m := Mismatch{Topic: c.topic, Kind: kind, Field: field, Expected: exp, Got: got}
	if r != nil {
		m.Seq, m.Step, m.TimeNs = r.seq, r.step, r.timeNs
	} else {
		m.Seq, m.Step, m.TimeNs = p.seq, p.step, p.timeNs
	}
	m.Offset = c.offset(m.TimeNs)
	c.add(m)
}

// run aligns pub with rec and compares each pair.
func (c *comparer) run(rec []recOut, pub []pubOut) {
	pairs, recUsed, pubUsed := align(c.ch, rec, pub)
	for _, pr := range pairs {
		c.paired++
		c.compare(&rec[pr[0]], &pub[pr[1]])
	}
	for i := range rec {
		if !recUsed[i] {
			c.bad++
			c.mismatch("missing", &rec[i], nil, "", "", "")
		}
	}
	for i := range pub {
		if !pubUsed[i] && c.endNs > 0 && pub[i].timeNs > c.endNs {
			c.afterEnd++
			continue
		}
		if !pubUsed[i] {
			c.bad++
			c.mismatch("extra", nil, &pub[i], "", "", "")
		}
	}
}

// align pairs recorded and published outputs by the check's rule.
func align(ch *Check, rec []recOut, pub []pubOut) (pairs [][2]int, recUsed, pubUsed []bool) {
	recUsed, pubUsed = make([]bool, len(rec)), make([]bool, len(pub))
	use := func(i, j int) {
		pairs = append(pairs, [2]int{i, j})
		recUsed[i], pubUsed[j] = true, true
	}
	switch ch.Align {
	case AlignSeq:
		for i := 0; i < min(len(rec), len(pub)); i++ {
			use(i, i)
		}
	case AlignTime:
		byGen := map[int64][]int{}
		for j := range pub {
			byGen[pub[j].genNs] = append(byGen[pub[j].genNs], j)
		}
		for i := range rec {
			if js := byGen[rec[i].genNs]; len(js) > 0 {
				use(i, js[0])
				byGen[rec[i].genNs] = js[1:]
			}
		}
	case AlignNearest:
		w := int64(ch.Window)
		lo := 0
		for i := range rec {
			t := rec[i].timeNs
			for lo < len(pub) && (pub[lo].timeNs < t-w || pubUsed[lo]) {
				lo++
			}
			best := -1
			for j := lo; j < len(pub) && pub[j].timeNs <= t+w; j++ {
				if !pubUsed[j] && (best < 0 || absNs(pub[j].timeNs-t) < absNs(pub[best].timeNs-t)) {
					best = j
				}
			}
			if best >= 0 {
				use(i, best)
			}
		}
	}
	return pairs, recUsed, pubUsed
}

// numbers decodes msg's numeric fields, in schema order.
func numbers(d schema.Decoder, msg []byte) (paths []string, vals map[string]float64, err error) {
	vals = map[string]float64{}
	err = d.Numeric(msg, func(p []byte, v float64) {
		k := string(p)
		if _, dup := vals[k]; !dup {
			paths = append(paths, k)
		}
		vals[k] = v
	})
	return paths, vals, err
}

func (c *comparer) selected(field string) bool {
	if len(c.ch.Fields) == 0 {
		return true
	}
	for _, f := range c.ch.Fields {
		if field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[") {
			return true
		}
	}
	return false
}

// fmtNum prints a number in its shortest form; a value a float32 holds
// exactly (a f32 field) in the shortest form that reads back as that
// float32 (0.2, not 0.20000000298023224).
func fmtNum(v float64) string {
	if f := float32(v); float64(f) == v {
		return strconv.FormatFloat(v, 'g', -1, 32)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// compare checks one pair by the check's mode.
func (c *comparer) compare(r *recOut, p *pubOut) {
	switch c.ch.Mode {
	case CheckNone:
		if w := int64(c.ch.Window); w > 0 && r.lat >= 0 && absNs(p.lat-r.lat) > w {
			c.bad++
			c.mismatch("timing", r, p, "latency", time.Duration(r.lat).String(), time.Duration(p.lat).String())
		}
	case CheckExact:
		if bytes.Equal(r.data, p.data) {
			return
		}
		if c.ch.Decoder != nil && c.fieldDiffs(r, p, 0, 0) > 0 {
			return
		}
		c.bad++
		c.byteDiff(r, p)
	case CheckTolerance:
		// numbers only: strings, bytes and padding are not compared
		c.fieldDiffs(r, p, c.ch.Abs, c.ch.Rel)
	}
}

// fieldDiffs reports every selected numeric field that differs by more than
// abs + rel*|recorded| (exact: any difference) and returns how many.
func (c *comparer) fieldDiffs(r *recOut, p *pubOut, abs, rel float64) int {
	rp, rv, rerr := numbers(c.ch.Decoder, r.data)
	_, pv, perr := numbers(c.ch.Decoder, p.data)
	if rerr != nil || perr != nil {
		exp, got := "decodes", "decodes"
		if rerr != nil {
			exp = rerr.Error()
		}
		if perr != nil {
			got = perr.Error()
		}
		c.bad++
		c.mismatch("value", r, p, "(decode)", exp, got)
		return 1
	}
	n := 0
	for _, k := range rp {
		if !c.selected(k) {
			continue
		}
		e := rv[k]
		g, ok := pv[k]
		switch {
		case !ok:
			c.mismatch("value", r, p, k, fmtNum(e), "(absent)")
		case math.IsNaN(e) && math.IsNaN(g), e == g:
			continue
		case abs+rel > 0 && math.Abs(g-e) <= abs+rel*math.Abs(e):
			continue
		default:
			c.mismatch("value", r, p, k, fmtNum(e), fmtNum(g))
		}
		n++
	}
	for k, g := range pv {
		if _, ok := rv[k]; !ok && c.selected(k) {
			c.mismatch("value", r, p, k, "(absent)", fmtNum(g))
			n++
		}
	}
	if n > 0 {
		c.bad++
	}
	return n
}

// byteDiff reports the first differing byte (or the length).
func (c *comparer) byteDiff(r *recOut, p *pubOut) {
	i := 0
	for i < len(r.data) && i < len(p.data) && r.data[i] == p.data[i] {
		i++
	}
	if i == len(r.data) || i == len(p.data) {
		c.mismatch("value", r, p, "length", strconv.Itoa(len(r.data))+" bytes", strconv.Itoa(len(p.data))+" bytes")
		return
	}
	win := func(b []byte) string { return fmt.Sprintf("%x", b[i:min(len(b), i+16)]) }
	c.mismatch("value", r, p, fmt.Sprintf("bytes[%d]", i), win(r.data), win(p.data))
}

// OutputMessage is one output message for CompareOutputs.
type OutputMessage struct {
	TimeNs int64 // message time (replay time for a published one)
	GenNs  int64 // producer time (0 = unknown)
	Data   []byte
}

// CompareOutputs compares the outputs a system under test published on
// one topic with the recorded ones, by ch, as a closed loop does (each
// message its own step, numbered from 1), and returns every mismatch. The
// messages are untrusted: decoding is bounded by each message and never
// panics (fuzz/replay_fuzz_test.go).
func CompareOutputs(ch Check, topic string, recorded, published []OutputMessage) ([]Mismatch, error) {
	if err := ch.validate(); err != nil {
		return nil, err
	}
	if ch.Mode == CheckTolerance && ch.Decoder == nil {
		return nil, fmt.Errorf("%w: a tolerance check of %s needs a decoder", ErrOptions, topic)
	}
	rec := make([]recOut, len(recorded))
	for i, m := range recorded {
		rec[i] = recOut{seq: i, step: i + 1, timeNs: m.TimeNs, genNs: m.GenNs, data: m.Data}
	}
	pub := make([]pubOut, len(published))
	for i, m := range published {
		pub[i] = pubOut{seq: i, step: i + 1, timeNs: m.TimeNs, genNs: m.GenNs, data: m.Data}
	}
	var out []Mismatch
	var first int64
	if len(recorded) > 0 {
		first = recorded[0].TimeNs
	}
	c := &comparer{ch: &ch, topic: topic, firstNs: first, add: func(m Mismatch) { out = append(out, m) }}
	c.run(rec, pub)
	return out, nil
}
