package feedcheck

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/schema"
)

// ErrOptions is what every *OptionError is (errors.Is): a Check or a mode
// name that cannot be used.
var ErrOptions = errors.New("feedcheck: bad check")

// OptionError is a Check that cannot be used. Detail says why, naming the
// check's topic glob; harnesses rewrap it under their own sentinel.
type OptionError struct{ Detail string }

func (e *OptionError) Error() string        { return ErrOptions.Error() + ": " + e.Detail }
func (e *OptionError) Is(target error) bool { return target == ErrOptions }

func optErr(format string, args ...any) error {
	return &OptionError{Detail: fmt.Sprintf(format, args...)}
}

// Mode is how a Check compares an output of the system under test with the
// recorded one (the reference's FeedCheck Exact / Tolerance / None).
type Mode int

const (
	// Exact compares the payload bytes. With a decoder, a difference is
	// reported per numeric field; without one, at the first differing
	// byte.
	Exact Mode = iota
	// Tolerance compares every numeric field (Decoder.Numeric) within
	// Abs + Rel*|recorded| (or its FieldTolerance); it needs a decoder.
	Tolerance
	// None compares the count of outputs, and their timing when
	// Check.Window is set, not their content.
	None
)

var modeNames = [...]string{Exact: "exact", Tolerance: "tolerance", None: "none"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "CheckMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses "exact", "tolerance" or "none".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, optErr("check %q: want exact, tolerance or none", s)
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
	if a >= 0 && int(a) < len(alignNames) {
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
	return 0, optErr("align %q: want seq, time or nearest", s)
}

// FieldTolerance bounds the difference of one field (and of what lies
// under it: "p" covers "p.x" and "p[2]") under Tolerance, in place of the
// Check's Abs and Rel: |got - recorded| <= Abs + Rel*|recorded|.
type FieldTolerance struct {
	Field    string
	Abs, Rel float64
}

// Check is the FeedCheck of the expected topics its glob selects.
type Check struct {
	// Topic is a glob over the recorded topic name (or name#channel); ""
	// selects every topic.
	Topic string
	Mode  Mode
	// Abs and Rel bound a numeric field's difference under Tolerance:
	// |got - recorded| <= Abs + Rel*|recorded|. NaN equals NaN.
	Abs, Rel float64
	// Tolerances bound some fields otherwise than Abs and Rel (the first
	// that covers a field wins). Under Exact they are not used.
	Tolerances []FieldTolerance
	// Fields restricts the comparison to these field paths (and what lies
	// under them: "p" covers "p.x" and "p[2]"); empty compares every
	// numeric field.
	Fields []string
	Align  Align
	// Window is, for AlignNearest, how far apart in replay time a pair
	// may be; for None, when positive, how much an output's latency
	// after its input may differ from the recorded one.
	Window time.Duration
	// Decoder reads the topic's messages (nil: bytes only). Schema says
	// where it came from, for the report.
	Decoder schema.Decoder
	Schema  string
}

// Matches reports whether the check's glob selects topic ("name" or
// "name#channel"; a glob without a channel selects every channel).
func (c *Check) Matches(topic string) bool {
	if c.Topic == "" {
		return true
	}
	name, _, _ := strings.Cut(topic, "#")
	ok1, _ := path.Match(c.Topic, topic)
	ok2, _ := path.Match(c.Topic, name)
	return ok1 || ok2
}

func badTol(v float64) bool { return v < 0 || math.IsNaN(v) }

// Validate checks the check's values; the error is an *OptionError.
func (c *Check) Validate() error {
	switch {
	case c.Mode < Exact || c.Mode > None:
		return optErr("check mode %d", c.Mode)
	case c.Align < AlignSeq || c.Align > AlignNearest:
		return optErr("align %d", c.Align)
	case badTol(c.Abs) || badTol(c.Rel):
		return optErr("check %q: tolerances must be 0 or more", c.Topic)
	case c.Align == AlignNearest && c.Window <= 0:
		return optErr("check %q: align nearest needs a window", c.Topic)
	case c.Window < 0:
		return optErr("check %q: negative window", c.Topic)
	}
	for _, ft := range c.Tolerances {
		if ft.Field == "" {
			return optErr("check %q: a field tolerance names no field", c.Topic)
		}
		if badTol(ft.Abs) || badTol(ft.Rel) {
			return optErr("check %q: field %s: tolerances must be 0 or more", c.Topic, ft.Field)
		}
	}
	if _, err := path.Match(c.Topic, ""); err != nil {
		return optErr("check topic glob %q: %v", c.Topic, err)
	}
	return nil
}

// covers reports whether field path f is p or lies under it.
func covers(p, f string) bool {
	return f == p || strings.HasPrefix(f, p+".") || strings.HasPrefix(f, p+"[")
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
