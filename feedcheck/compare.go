package feedcheck

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/edr-lite/edr-lite/schema"
)

// Recorded is a recorded output of the system under test, attributed to
// the input step it answers.
type Recorded struct {
	Seq    int   // index on its topic, from 0
	Step   int   // the input step it answers, from 1
	TimeNs int64 // message time
	GenNs  int64 // producer time (0 = unknown); AlignTime pairs by it
	// Lat is its latency after its step's input, in message time (-1:
	// unknown; a None check with a Window then skips it).
	Lat  int64
	Data []byte
}

// Published is an output the system under test produced during a replay.
type Published struct {
	Seq    int
	Step   int
	TimeNs int64 // replay time: its step's recorded time + the latency
	GenNs  int64
	Lat    int64 // measured from its step's input release
	Data   []byte
}

// Comparer compares one topic's outputs by a Check and hands each Mismatch
// to Add. Set the exported fields, call Run once, then read the counts.
type Comparer struct {
	Check *Check
	Topic string
	// FirstNs is the time Mismatch.Offset counts from (the first input).
	FirstNs int64
	// EndNs is the end of the recording: an unpaired output whose replay
	// time is later is not an extra (its counterpart may lie beyond the
	// dump's window), only counted in AfterEnd. 0: no end.
	EndNs int64
	Add   func(Mismatch)

	// Paired counts the pairs compared, Bad the outputs that differ (or
	// are missing or extra), AfterEnd the unpaired outputs after EndNs.
	Paired, Bad, AfterEnd int
}

func (c *Comparer) offset(ns int64) string {
	return "+" + time.Duration(ns-c.FirstNs).Round(time.Microsecond).String()
}

func (c *Comparer) mismatch(kind string, r *Recorded, p *Published, field, exp, got string) {
	m := Mismatch{Topic: c.Topic, Kind: kind, Field: field, Expected: exp, Got: got}
	if r != nil {
		m.Seq, m.Step, m.TimeNs = r.Seq, r.Step, r.TimeNs
	} else {
		m.Seq, m.Step, m.TimeNs = p.Seq, p.Step, p.TimeNs
	}
	m.Offset = c.offset(m.TimeNs)
	c.Add(m)
}

// Run aligns pub with rec and compares each pair; what stays unpaired is
// missing (recorded) or extra (published).
func (c *Comparer) Run(rec []Recorded, pub []Published) {
	pairs, recUsed, pubUsed := align(c.Check, rec, pub)
	for _, pr := range pairs {
		c.Paired++
		c.compare(&rec[pr[0]], &pub[pr[1]])
	}
	for i := range rec {
		if !recUsed[i] {
			c.Bad++
			c.mismatch("missing", &rec[i], nil, "", "", "")
		}
	}
	for i := range pub {
		if !pubUsed[i] && c.EndNs > 0 && pub[i].TimeNs > c.EndNs {
			c.AfterEnd++
			continue
		}
		if !pubUsed[i] {
			c.Bad++
			c.mismatch("extra", nil, &pub[i], "", "", "")
		}
	}
}

func absNs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// align pairs recorded and published outputs by the check's rule.
func align(ch *Check, rec []Recorded, pub []Published) (pairs [][2]int, recUsed, pubUsed []bool) {
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
			byGen[pub[j].GenNs] = append(byGen[pub[j].GenNs], j)
		}
		for i := range rec {
			if js := byGen[rec[i].GenNs]; len(js) > 0 {
				use(i, js[0])
				byGen[rec[i].GenNs] = js[1:]
			}
		}
	case AlignNearest:
		w := int64(ch.Window)
		lo := 0
		for i := range rec {
			t := rec[i].TimeNs
			for lo < len(pub) && (pub[lo].TimeNs < t-w || pubUsed[lo]) {
				lo++
			}
			best := -1
			for j := lo; j < len(pub) && pub[j].TimeNs <= t+w; j++ {
				if !pubUsed[j] && (best < 0 || absNs(pub[j].TimeNs-t) < absNs(pub[best].TimeNs-t)) {
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

func (c *Comparer) selected(field string) bool {
	if len(c.Check.Fields) == 0 {
		return true
	}
	for _, f := range c.Check.Fields {
		if covers(f, field) {
			return true
		}
	}
	return false
}

// tolerance returns the bounds of field: its FieldTolerance, else the
// check's.
func (c *Comparer) tolerance(field string) (abs, rel float64) {
	for _, ft := range c.Check.Tolerances {
		if covers(ft.Field, field) {
			return ft.Abs, ft.Rel
		}
	}
	return c.Check.Abs, c.Check.Rel
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
func (c *Comparer) compare(r *Recorded, p *Published) {
	switch c.Check.Mode {
	case None:
		if w := int64(c.Check.Window); w > 0 && r.Lat >= 0 && absNs(p.Lat-r.Lat) > w {
			c.Bad++
			c.mismatch("timing", r, p, "latency", time.Duration(r.Lat).String(), time.Duration(p.Lat).String())
		}
	case Exact:
		if bytes.Equal(r.Data, p.Data) {
			return
		}
		if c.Check.Decoder != nil && c.fieldDiffs(r, p, false) > 0 {
			return
		}
		c.Bad++
		c.byteDiff(r, p)
	case Tolerance:
		// numbers only: strings, bytes and padding are not compared
		c.fieldDiffs(r, p, true)
	}
}

// fieldDiffs reports every selected numeric field that differs (by more
// than its tolerance when tol) and returns how many.
func (c *Comparer) fieldDiffs(r *Recorded, p *Published, tol bool) int {
	rp, rv, rerr := numbers(c.Check.Decoder, r.Data)
	_, pv, perr := numbers(c.Check.Decoder, p.Data)
	if rerr != nil || perr != nil {
		exp, got := "decodes", "decodes"
		if rerr != nil {
			exp = rerr.Error()
		}
		if perr != nil {
			got = perr.Error()
		}
		c.Bad++
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
		var abs, rel float64
		if tol {
			abs, rel = c.tolerance(k)
		}
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
		c.Bad++
	}
	return n
}

// byteDiff reports the first differing byte (or the length).
func (c *Comparer) byteDiff(r *Recorded, p *Published) {
	i := 0
	for i < len(r.Data) && i < len(p.Data) && r.Data[i] == p.Data[i] {
		i++
	}
	if i == len(r.Data) || i == len(p.Data) {
		c.mismatch("value", r, p, "length", strconv.Itoa(len(r.Data))+" bytes", strconv.Itoa(len(p.Data))+" bytes")
		return
	}
	win := func(b []byte) string { return fmt.Sprintf("%x", b[i:min(len(b), i+16)]) }
	c.mismatch("value", r, p, fmt.Sprintf("bytes[%d]", i), win(r.Data), win(p.Data))
}

// Message is one output message for Compare.
type Message struct {
	TimeNs int64 // message time (replay time for a published one)
	GenNs  int64 // producer time (0 = unknown)
	Data   []byte
}

// Compare compares the outputs a system under test published on one topic
// with the recorded ones, by ch, as a closed loop does (each message its
// own step, numbered from 1), and returns every mismatch. The messages
// are untrusted: decoding is bounded by each message and never panics.
func Compare(ch Check, topic string, recorded, published []Message) ([]Mismatch, error) {
	if err := ch.Validate(); err != nil {
		return nil, err
	}
	if ch.Mode == Tolerance && ch.Decoder == nil {
		return nil, optErr("a tolerance check of %s needs a decoder", topic)
	}
	rec := make([]Recorded, len(recorded))
	for i, m := range recorded {
		rec[i] = Recorded{Seq: i, Step: i + 1, TimeNs: m.TimeNs, GenNs: m.GenNs, Data: m.Data}
	}
	pub := make([]Published, len(published))
	for i, m := range published {
		pub[i] = Published{Seq: i, Step: i + 1, TimeNs: m.TimeNs, GenNs: m.GenNs, Data: m.Data}
	}
	var out []Mismatch
	var first int64
	if len(recorded) > 0 {
		first = recorded[0].TimeNs
	}
	c := &Comparer{Check: &ch, Topic: topic, FirstNs: first, Add: func(m Mismatch) { out = append(out, m) }}
	c.Run(rec, pub)
	return out, nil
}
