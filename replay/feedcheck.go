package replay

import (
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/feedcheck"
)

// The comparison of outputs (FeedCheck) lives in package feedcheck, shared
// with the in-process replay of package step; these names keep replay's
// API.

// CheckMode is how a FeedCheck compares an output of the system under test
// with the recorded one (feedcheck.Mode).
type CheckMode = feedcheck.Mode

// The check modes (feedcheck.Exact, Tolerance, None).
const (
	CheckExact     = feedcheck.Exact
	CheckTolerance = feedcheck.Tolerance
	CheckNone      = feedcheck.None
)

// Align is how the outputs of a topic are paired with the recorded ones
// (feedcheck.Align).
type Align = feedcheck.Align

// The pairings (feedcheck.AlignSeq, AlignTime, AlignNearest).
const (
	AlignSeq     = feedcheck.AlignSeq
	AlignTime    = feedcheck.AlignTime
	AlignNearest = feedcheck.AlignNearest
)

// Check is the FeedCheck of the expected topics its glob selects
// (feedcheck.Check).
type Check = feedcheck.Check

// Mismatch is one difference between what the system under test published
// and what the recording holds (feedcheck.Mismatch).
type Mismatch = feedcheck.Mismatch

// OutputMessage is one output message for CompareOutputs
// (feedcheck.Message).
type OutputMessage = feedcheck.Message

// optionErr rewraps a feedcheck option error as this package's ErrOptions,
// with the same words.
func optionErr(err error) error {
	var oe *feedcheck.OptionError
	if errors.As(err, &oe) {
		return fmt.Errorf("%w: %s", ErrOptions, oe.Detail)
	}
	return err
}

// ParseCheckMode parses "exact", "tolerance" or "none".
func ParseCheckMode(s string) (CheckMode, error) {
	m, err := feedcheck.ParseMode(s)
	return m, optionErr(err)
}

// ParseAlign parses "seq", "time" or "nearest".
func ParseAlign(s string) (Align, error) {
	a, err := feedcheck.ParseAlign(s)
	return a, optionErr(err)
}

// validateCheck checks c's values (ErrOptions).
func validateCheck(c *Check) error { return optionErr(c.Validate()) }

// CompareOutputs compares the outputs a system under test published on
// one topic with the recorded ones, by ch, as a closed loop does (each
// message its own step, numbered from 1), and returns every mismatch
// (feedcheck.Compare). The messages are untrusted: decoding is bounded by
// each message and never panics (fuzz/replay_fuzz_test.go).
func CompareOutputs(ch Check, topic string, recorded, published []OutputMessage) ([]Mismatch, error) {
	ms, err := feedcheck.Compare(ch, topic, recorded, published)
	return ms, optionErr(err)
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

// comparer compares one topic's outputs and reports mismatches, through a
// feedcheck.Comparer.
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

// run aligns pub with rec and compares each pair.
func (c *comparer) run(rec []recOut, pub []pubOut) {
	r := make([]feedcheck.Recorded, len(rec))
	for i, o := range rec {
		r[i] = feedcheck.Recorded{Seq: o.seq, Step: o.step, TimeNs: o.timeNs, GenNs: o.genNs, Lat: o.lat, Data: o.data}
	}
	p := make([]feedcheck.Published, len(pub))
	for i, o := range pub {
		p[i] = feedcheck.Published{Seq: o.seq, Step: o.step, TimeNs: o.timeNs, GenNs: o.genNs, Lat: o.lat, Data: o.data}
	}
	fc := feedcheck.Comparer{Check: c.ch, Topic: c.topic, FirstNs: c.firstNs, EndNs: c.endNs, Add: c.add}
	fc.Run(r, p)
	c.paired += fc.Paired
	c.bad += fc.Bad
	c.afterEnd += fc.AfterEnd
}
