package filter

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/internal/units"
)

// Sentinel errors: Parse and Window fail with ErrUsage (a bad flag value,
// --from after --to), Check and Empty with ErrNothing.
var (
	ErrUsage   = errors.New("filter: bad selection")
	ErrNothing = errors.New("filter: the selection matches nothing")
)

// Topics selects topics by globs: Include (empty = every topic) less
// Exclude.
type Topics struct {
	Include, Exclude []string
}

// ParseTopics parses comma-separated glob lists (the --topics and
// --exclude values) and checks their syntax.
func ParseTopics(include, exclude string) (Topics, error) {
	t := Topics{Include: splitList(include), Exclude: splitList(exclude)}
	for _, l := range []struct {
		flag  string
		globs []string
	}{{"--topics", t.Include}, {"--exclude", t.Exclude}} {
		for _, g := range l.globs {
			if _, err := path.Match(g, ""); err != nil {
				return Topics{}, fmt.Errorf("%w: %s: glob %q: %v", ErrUsage, l.flag, g, err)
			}
		}
	}
	return t, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// All reports whether every topic is selected (no glob given).
func (t Topics) All() bool { return len(t.Include) == 0 && len(t.Exclude) == 0 }

// Match reports whether topic ("name" or "name#channel"; a trailing "#"
// for an empty channel is ignored) is selected.
func (t Topics) Match(topic string) bool {
	topic = strings.TrimSuffix(topic, "#")
	name := topic
	if i := strings.LastIndexByte(topic, '#'); i >= 0 {
		name = topic[:i]
	}
	if len(t.Include) > 0 && !matchAny(t.Include, topic, name) {
		return false
	}
	return !matchAny(t.Exclude, topic, name)
}

// MatchName is Match for a topic given as name and channel.
func (t Topics) MatchName(name, channel string) bool {
	if t.All() {
		return true
	}
	if channel == "" {
		return t.Match(name)
	}
	return t.Match(name + "#" + channel)
}

func matchAny(globs []string, topic, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, topic); ok {
			return true
		}
		if name != topic {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
	}
	return false
}

// String spells the topic flags as given: "--topics 'a/*' --exclude b".
func (t Topics) String() string {
	var parts []string
	if len(t.Include) > 0 {
		parts = append(parts, "--topics "+quote(strings.Join(t.Include, ",")))
	}
	if len(t.Exclude) > 0 {
		parts = append(parts, "--exclude "+quote(strings.Join(t.Exclude, ",")))
	}
	return strings.Join(parts, " ")
}

func quote(s string) string {
	if strings.ContainsAny(s, " *?[]\\'\"") {
		return "'" + s + "'"
	}
	return s
}

// Time is a --from or --to value: absolute, or an offset from the input's
// start. The zero Time is unset.
type Time struct {
	raw    string
	ns     int64
	offset bool
}

// ParseTime parses nanoseconds since the epoch ("1764670000000000000"),
// RFC 3339 ("2026-12-02T10:15:00.5Z") or an offset from the start ("2.5s",
// "1m"; units.ParseDuration syntax, not negative). "" is the unset Time.
func ParseTime(s string) (Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Time{}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Time{raw: s, ns: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Time{raw: s, ns: t.UnixNano()}, nil
	}
	if d, err := units.ParseDuration(s); err == nil && d >= 0 {
		return Time{raw: s, ns: int64(d), offset: true}, nil
	}
	return Time{}, fmt.Errorf("time %q: want nanoseconds since the epoch, RFC 3339 (2026-12-02T10:15:00.5Z) or an offset from the start (2.5s)", s)
}

// Set reports whether the Time was given.
func (t Time) Set() bool { return t.raw != "" }

// Offset reports whether the Time is an offset from the input's start.
func (t Time) Offset() bool { return t.offset }

// At returns the time in nanoseconds since the epoch, for an input that
// starts at startNs.
func (t Time) At(startNs int64) int64 {
	if t.offset {
		return startNs + t.ns
	}
	return t.ns
}

// String returns the value as given.
func (t Time) String() string { return t.raw }

// Selection is the parsed selection flags of a reading verb.
type Selection struct {
	Topics
	From, To Time
}

// Parse parses the four selection flags' values (empty = not given). A
// bad value is an ErrUsage naming the flag.
func Parse(topics, exclude, from, to string) (Selection, error) {
	var s Selection
	var err error
	if s.Topics, err = ParseTopics(topics, exclude); err != nil {
		return Selection{}, err
	}
	if s.From, err = ParseTime(from); err != nil {
		return Selection{}, fmt.Errorf("%w: --from: %v", ErrUsage, err)
	}
	if s.To, err = ParseTime(to); err != nil {
		return Selection{}, fmt.Errorf("%w: --to: %v", ErrUsage, err)
	}
	// Both absolute or both offsets: the order is known now.
	if s.From.Set() && s.To.Set() && s.From.offset == s.To.offset && s.From.ns > s.To.ns {
		return Selection{}, fmt.Errorf("%w: --from %s is after --to %s", ErrUsage, s.From, s.To)
	}
	return s, nil
}

// All reports whether the selection selects everything (no flag given).
func (s Selection) All() bool { return s.Topics.All() && !s.From.Set() && !s.To.Set() }

// NeedsStart reports whether --from or --to is an offset, so that the
// input's start must be known before reading.
func (s Selection) NeedsStart() bool { return s.From.offset || s.To.offset }

// Unbounded is the window of a selection without --from and --to.
const (
	MinNs = math.MinInt64
	MaxNs = math.MaxInt64
)

// Window resolves --from and --to for an input starting at startNs:
// [fromNs, toNs], inclusive, MinNs / MaxNs where not given. --from after
// --to is an ErrUsage.
func (s Selection) Window(startNs int64) (fromNs, toNs int64, err error) {
	fromNs, toNs = MinNs, MaxNs
	if s.From.Set() {
		fromNs = s.From.At(startNs)
	}
	if s.To.Set() {
		toNs = s.To.At(startNs)
	}
	if fromNs > toNs {
		return 0, 0, s.orderError(fromNs, toNs)
	}
	return fromNs, toNs, nil
}

func (s Selection) orderError(fromNs, toNs int64) error {
	return fmt.Errorf("%w: --from %s (%s) is after --to %s (%s)", ErrUsage, s.From, describe(s.From, fromNs), s.To, describe(s.To, toNs))
}

func describe(t Time, ns int64) string {
	if t.offset {
		return FormatTime(ns) + ", " + time.Duration(t.ns).String() + " after the start"
	}
	return FormatTime(ns)
}

// FormatTime renders a time as the offline verbs print it: RFC 3339 in UTC
// with nanoseconds.
func FormatTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// Held is what an input holds, for the errors of a selection that matches
// nothing: its topics (as the verbs spell them) and the time range of its
// messages.
type Held struct {
	What             string // "dump.pack", "3 dumps"; "the input" when empty
	Topics           []string
	StartNs, EndNs   int64
	Messages         uint64
	TimesUnknown     bool // a stream: times not known before reading
	TopicsIncomplete bool // Topics is not known before reading
}

// Check tells, before reading, whether the selection can match anything in
// h within [fromNs, toNs]: a topic must match and the window must overlap
// the input's time range. The error (ErrNothing) names what h holds.
func (s Selection) Check(h Held, fromNs, toNs int64) error {
	if !h.TopicsIncomplete && !s.Topics.All() {
		n := 0
		for _, t := range h.Topics {
			if s.Match(t) {
				n++
			}
		}
		if n == 0 {
			verb := "matches no topic"
			if len(s.Topics.Include) == 0 {
				verb = "leaves no topic"
			}
			return fmt.Errorf("%w: %s %s; %s holds %s", ErrNothing, s.Topics, verb, h.what(), listTopics(h.Topics))
		}
	}
	if h.TimesUnknown || h.Messages == 0 || (fromNs == MinNs && toNs == MaxNs) {
		return nil
	}
	if toNs < h.StartNs || fromNs > h.EndNs {
		return fmt.Errorf("%w: %s selects nothing; %s holds messages from %s to %s", ErrNothing, s.timeFlags(fromNs, toNs),
			h.what(), FormatTime(h.StartNs), FormatTime(h.EndNs))
	}
	return nil
}

// Unmatched says of each glob of --topics and --exclude that matches none
// of the topics h holds ("--topics G matches no topic; a.pack holds ..."):
// a typo, usually, that would silently select less (or exclude nothing).
// None when h's topics are not known before reading.
func (s Selection) Unmatched(h Held) []string {
	if h.TopicsIncomplete {
		return nil
	}
	var out []string
	for _, l := range []struct {
		flag  string
		globs []string
	}{{"--topics", s.Topics.Include}, {"--exclude", s.Topics.Exclude}} {
		for _, g := range l.globs {
			hit := false
			for _, t := range h.Topics {
				name := t
				if i := strings.LastIndexByte(t, '#'); i >= 0 {
					name = t[:i]
				}
				hit = hit || matchAny([]string{g}, t, name)
			}
			if !hit {
				out = append(out, fmt.Sprintf("%s %s matches no topic; %s holds %s", l.flag, g, h.what(), listTopics(h.Topics)))
			}
		}
	}
	return out
}

// Empty is the error for a selection that was read through and matched no
// message although Check passed: the topics it selected hold nothing in
// the window.
func (s Selection) Empty(h Held, fromNs, toNs int64) error {
	var sel []string
	for _, t := range h.Topics {
		if s.Match(t) {
			sel = append(sel, t)
		}
	}
	what := "no message"
	if !s.Topics.All() && len(sel) > 0 {
		what = "no message of " + listTopics(sel)
	}
	if fromNs == MinNs && toNs == MaxNs {
		return fmt.Errorf("%w: %s; %s holds %s", ErrNothing, what, h.what(), listTopics(h.Topics))
	}
	span := ""
	if h.Messages > 0 && !h.TimesUnknown {
		span = fmt.Sprintf(" (%s holds messages from %s to %s)", h.what(), FormatTime(h.StartNs), FormatTime(h.EndNs))
	}
	return fmt.Errorf("%w: %s lies within %s%s", ErrNothing, what, s.timeFlags(fromNs, toNs), span)
}

// timeFlags spells the window: "--from X --to Y" with absolute times.
func (s Selection) timeFlags(fromNs, toNs int64) string {
	var parts []string
	if fromNs != MinNs {
		parts = append(parts, "--from "+FormatTime(fromNs))
	}
	if toNs != MaxNs {
		parts = append(parts, "--to "+FormatTime(toNs))
	}
	return strings.Join(parts, " ")
}

func (h Held) what() string {
	if h.What == "" {
		return "the input"
	}
	return h.What
}

// maxListed bounds how many topics an error lists.
const maxListed = 12

func listTopics(ts []string) string {
	if len(ts) == 0 {
		return "no topic"
	}
	ts = append([]string(nil), ts...)
	sort.Strings(ts)
	if len(ts) > maxListed {
		return strings.Join(ts[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(ts)-maxListed)
	}
	return strings.Join(ts, ", ")
}
