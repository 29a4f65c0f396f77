package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/scripts"
)

// BuiltinPrefix names a shipped rule in a rules spec: "builtin:hard_brake".
const BuiltinPrefix = "builtin:"

// Trigger is one trigger as "rules test" prints and compares it: fired by a
// rule during a replay, or recorded in a dump's DumpInfo. Its JSON form
// (field order as declared, params sorted by key) is the same on every run.
type Trigger struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	TimeNs int64  `json:"time_ns"`
	Time   string `json:"time"` // TimeNs in RFC 3339, UTC
	// PreNs and PostNs are the windows the trigger set, absent when it
	// set none (the recorder's windows apply).
	PreNs    *int64            `json:"pre_ns,omitempty"`
	PostNs   *int64            `json:"post_ns,omitempty"`
	Tag      string            `json:"tag,omitempty"`
	Severity int               `json:"severity,omitempty"`
	Topics   []string          `json:"topics,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	// Source is where a recorded trigger came from (source and dump path);
	// "" for a fired one. Not part of the JSON form.
	Source string `json:"-"`
}

func fmtNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// RulesOptions configure RunRules.
type RulesOptions struct {
	// Params are given to every rule (param(name, default) in Lua).
	Params map[string]string
	// RuleParams are given to the rule loaded from the file with this base
	// name (without .lua; for "builtin:NAME", NAME), over Params.
	RuleParams map[string]map[string]string
	// Budget bounds each rule; zero fields take the defaults.
	Budget scripts.Budget
	// Logger receives the rules' log(...) lines; nil discards them.
	Logger *slog.Logger
}

// RulesResult is what RunRules found.
type RulesResult struct {
	Rules    []string  // names of the loaded rules, in load order
	Fired    []Trigger // in firing order (message time)
	Recorded []Trigger // from the dumps' DumpInfo, by time, duplicates removed
	Status   []scripts.RuleStatus
	Messages uint64 // messages fed
	// Held are the topics of the dumps with their message counts, in
	// the player's order (sorted by name).
	Held []HeldTopic
	// reads says, by rule (load order), whether it defines on_message.
	reads []bool
}

// HeldTopic is a topic of the replayed dumps and how many messages it
// holds.
type HeldTopic struct {
	Topic    string
	Messages uint64
}

// Silent describes each loaded rule that received no message: a rule
// reading topics (on_message) none of which held a message in the dumps,
// or any rule when the dumps hold no message at all. Its triggers, fired
// or not, prove nothing about the rule: "rules test" fails on it unless
// told that is expected (--allow-empty). Each text names the topics the
// rule reads and what the dumps hold.
func (r *RulesResult) Silent() []string {
	var held []string
	for _, h := range r.Held {
		held = append(held, fmt.Sprintf("%s (%d)", h.Topic, h.Messages))
	}
	holds := "no topic"
	if len(held) > 0 {
		holds = strings.Join(held, ", ")
	}
	var out []string
	for i, s := range r.Status {
		switch {
		case r.Messages == 0:
			out = append(out, fmt.Sprintf("rule %s received no message: the dumps hold none (they hold %s)", s.Name, holds))
		case i < len(r.reads) && r.reads[i] && s.Messages == 0 && !s.Disabled:
			why := "which the dumps do not hold"
			for _, h := range r.Held {
				if scripts.MatchTopic(s.Topics, h.Topic) {
					why = "whose topics in the dumps hold no message"
					break
				}
			}
			out = append(out, fmt.Sprintf("rule %s received no message: it reads %s, %s (they hold %s)", s.Name,
				strings.Join(s.Topics, ", "), why, holds))
		}
	}
	return out
}

// Disabled returns "rule: why" for every rule disabled by an error during
// the run.
func (r *RulesResult) Disabled() []string {
	var out []string
	for _, s := range r.Status {
		if s.Disabled {
			out = append(out, s.Name+": "+s.Why)
		}
	}
	return out
}

// ruleSources expands specs (a .lua file, a directory of them, or
// builtin:NAME) into (base name, spec) pairs in a stable order.
func ruleSources(specs []string) ([][2]string, error) {
	var out [][2]string
	for _, s := range specs {
		if name, ok := strings.CutPrefix(s, BuiltinPrefix); ok {
			out = append(out, [2]string{name, s})
			continue
		}
		st, err := os.Stat(s)
		if err != nil {
			// os.Stat's error names the path: say which option gave it
			return nil, fmt.Errorf("replay: --rules %s: %w", s, errors.Unwrap(err))
		}
		if !st.IsDir() {
			out = append(out, [2]string{strings.TrimSuffix(filepath.Base(s), ".lua"), s})
			continue
		}
		files, err := filepath.Glob(filepath.Join(s, "*.lua"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: rules directory %s holds no .lua file", ErrOptions, s)
		}
		sort.Strings(files)
		for _, f := range files {
			out = append(out, [2]string{strings.TrimSuffix(filepath.Base(f), ".lua"), f})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no rules given", ErrOptions)
	}
	return out, nil
}

// RunRules loads the rules named by specs (each a .lua file, a directory
// of them, or "builtin:NAME" for a shipped rule), feeds them every message
// of the dumps (pack or MCAP, in any mix) in message time order (scripts.Host.Feed, the same
// path the live recorder uses), ticks them up to the last message, and
// returns the triggers they fired next to those recorded in the dumps.
// The same dumps and rules give the same result on every run and machine.
func RunRules(dumps []string, specs []string, opts RulesOptions) (*RulesResult, error) {
	srcs, err := ruleSources(specs)
	if err != nil {
		return nil, err
	}
	res := &RulesResult{}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	onTrigger := func(t scripts.Trigger) {
		res.Fired = append(res.Fired, Trigger{Rule: t.Rule, Reason: t.Reason, TimeNs: t.TimeNs, Time: fmtNs(t.TimeNs),
			PreNs: durNs(t.Pre), PostNs: durNs(t.Post), Tag: t.Tag, Severity: t.Severity, Topics: t.Topics, Params: t.Params})
	}
	host, err := scripts.NewHost()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	for _, s := range srcs {
		params := map[string]string{}
		for k, v := range opts.Params {
			params[k] = v
		}
		for k, v := range opts.RuleParams[s[0]] {
			params[k] = v
		}
		o := scripts.Options{Params: params, Budget: opts.Budget, OnTrigger: onTrigger, Logger: logger}
		var r *scripts.Rule
		if name, ok := strings.CutPrefix(s[1], BuiltinPrefix); ok {
			r, err = scripts.LoadShipped(name, o)
		} else {
			r, err = scripts.Load(s[1], o)
		}
		if err != nil {
			return nil, err
		}
		if err := host.Add(r); err != nil {
			r.Close()
			return nil, err
		}
		res.Rules = append(res.Rules, r.Name())
		res.reads = append(res.reads, r.ReadsMessages())
	}

	p, err := Open(dumps, Options{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	out := &rulesOutput{host: host}
	st, err := p.Run(context.Background(), out)
	if err != nil {
		return nil, err
	}
	if st.Messages > 0 {
		host.Tick(st.LastNs)
	}
	res.Messages = st.Messages
	res.Status = host.Status()
	for _, t := range p.Topics() {
		res.Held = append(res.Held, HeldTopic{Topic: t.String(), Messages: t.Messages})
	}
	res.Recorded = recordedOf(p.sources, dumps)
	return res, nil
}

// RecordedTriggers returns the triggers recorded in the dumps' dump
// information (pack or MCAP), by time, repeats of one trigger in several
// dumps removed: what "rules test --mode output-only" prints, and
// RulesResult.Recorded.
func RecordedTriggers(dumps []string) ([]Trigger, error) {
	if len(dumps) == 0 {
		return nil, fmt.Errorf("%w: no dump given", ErrOptions)
	}
	srcs := make([]*dumpfile.Source, 0, len(dumps))
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, d := range dumps {
		s, err := dumpfile.Open(d)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	return recordedOf(srcs, dumps), nil
}

func recordedOf(srcs []*dumpfile.Source, paths []string) []Trigger {
	var out []Trigger
	for i, path := range paths {
		d, ok := srcs[i].DumpInfo()
		if !ok {
			continue
		}
		for _, t := range d.Triggers {
			out = append(out, recordedTrigger(&t, path))
		}
	}
	return dedupe(out)
}

func recordedTrigger(t *dumpinfo.Trigger, path string) Trigger {
	src := t.Source
	if src == "" {
		src = "?"
	}
	// a trigger anchored at the last message fired at RequestedNs (rule
	// time); the recorder moved it to the newest message
	at := t.TimeNs
	if t.At == dumpinfo.AtLast && t.RequestedNs != 0 {
		at = t.RequestedNs
	}
	out := Trigger{Rule: t.Rule, Reason: t.Reason, TimeNs: at, Time: fmtNs(at), Tag: t.Tag, Severity: t.Severity,
		Params: t.Params, Source: src + " in " + path}
	if v, ok := t.Pre(); ok {
		out.PreNs = &v
	}
	if v, ok := t.Post(); ok {
		out.PostNs = &v
	}
	return out
}

// durNs is d in ns, nil when unset.
func durNs(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	return new(int64(*d))
}

// dedupe sorts recorded triggers by time and drops repeats of one trigger
// recorded in several dumps (same rule, reason and time).
func dedupe(ts []Trigger) []Trigger {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].TimeNs < ts[j].TimeNs })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].TimeNs == t.TimeNs && out[n-1].Rule == t.Rule && out[n-1].Reason == t.Reason {
			continue
		}
		out = append(out, t)
	}
	return out
}

// rulesOutput feeds replayed messages to a scripts.Host.
type rulesOutput struct {
	host  *scripts.Host
	names []string
	m     scripts.Message
}

func (o *rulesOutput) Open(topics []Topic) error {
	o.names = make([]string, len(topics))
	for i := range topics {
		o.names[i] = topics[i].String()
	}
	return nil
}

func (o *rulesOutput) Write(m *Message) error {
	o.m = scripts.Message{Topic: o.names[m.Topic.Index], TS: m.TimeNs, GenTS: m.GenNs, Seq: m.Seq, Data: m.Data, Type: m.Type}
	o.host.Feed(&o.m)
	return nil
}

func (o *rulesOutput) Close() error { return nil }

// Pair is a recorded trigger and the fired one that matches it.
type Pair struct{ Recorded, Fired Trigger }

// FieldDiff is one field of a matched pair that differs: "tag",
// "severity", "pre", "post" or "params.NAME".
type FieldDiff struct {
	Field, Recorded, Fired string
}

// Change is a recorded trigger matched by a fired one (same rule, reason,
// time within tolerance) whose other fields differ.
type Change struct {
	Pair
	Diffs []FieldDiff
}

// Comparison is the result of CompareTriggers.
type Comparison struct {
	Tolerance      time.Duration
	ValueTolerance float64
	Matched        []Pair
	Changed        []Change  // matched in time, but tag, severity, windows or params differ
	Missing        []Trigger // recorded by a loaded rule, not fired by the replay
	Unexpected     []Trigger // fired by the replay, not recorded
	Unchecked      []Trigger // recorded by other sources or rules not loaded
}

// OK reports whether every checked trigger matched.
func (c *Comparison) OK() bool {
	return len(c.Missing) == 0 && len(c.Unexpected) == 0 && len(c.Changed) == 0
}

// DefaultValueTolerance is how far two numbers in a tag or a parameter may
// be apart and still be equal: |a-b| <= tol * max(1, |a|, |b|) (so "6"
// equals "6.0", and printing a float with another precision passes).
const DefaultValueTolerance = 1e-9

// CompareOptions configure Compare.
type CompareOptions struct {
	// Time is how far a fired trigger's time may be from the recorded one.
	Time time.Duration
	// Value is the tolerance on numbers in tags and parameters (see
	// DefaultValueTolerance; 0 means the numbers must be equal, not the
	// text: "6" still equals "6.0").
	Value float64
}

// CompareTriggers is Compare with a time tolerance and
// DefaultValueTolerance.
func CompareTriggers(fired, recorded []Trigger, rules []string, tol time.Duration) *Comparison {
	return Compare(fired, recorded, rules, CompareOptions{Time: tol, Value: DefaultValueTolerance})
}

// Compare matches recorded triggers of the loaded rules against the fired
// ones: same rule and reason, time within opts.Time, each used once,
// nearest first (on a tie, one whose other fields agree). A matched pair
// whose tag, severity, windows (pre, post) or params differ is Changed:
// numbers inside tags and parameter values are compared as numbers within
// opts.Value, everything else exactly. Recorded triggers of other sources
// are Unchecked.
func Compare(fired, recorded []Trigger, rules []string, opts CompareOptions) *Comparison {
	c := &Comparison{Tolerance: opts.Time, ValueTolerance: opts.Value}
	loaded := map[string]bool{}
	for _, r := range rules {
		loaded[r] = true
	}
	used := make([]bool, len(fired))
	for _, r := range recorded {
		if !loaded[r.Rule] {
			c.Unchecked = append(c.Unchecked, r)
			continue
		}
		best, bestSame := -1, false
		for i, f := range fired {
			if used[i] || f.Rule != r.Rule || f.Reason != r.Reason || absNs(f.TimeNs-r.TimeNs) > int64(opts.Time) {
				continue
			}
			d, bd := absNs(f.TimeNs-r.TimeNs), int64(0)
			if best >= 0 {
				bd = absNs(fired[best].TimeNs - r.TimeNs)
			}
			same := len(diffTrigger(&r, &f, opts.Value)) == 0
			if best < 0 || d < bd || (d == bd && same && !bestSame) {
				best, bestSame = i, same
			}
		}
		if best < 0 {
			c.Missing = append(c.Missing, r)
			continue
		}
		used[best] = true
		p := Pair{Recorded: r, Fired: fired[best]}
		if d := diffTrigger(&r, &fired[best], opts.Value); len(d) > 0 {
			c.Changed = append(c.Changed, Change{Pair: p, Diffs: d})
			continue
		}
		c.Matched = append(c.Matched, p)
	}
	for i, f := range fired {
		if !used[i] {
			c.Unexpected = append(c.Unexpected, f)
		}
	}
	return c
}

// diffTrigger lists the fields of a recorded and a fired trigger that
// differ, in a fixed order (tag, severity, pre, post, params by name).
func diffTrigger(r, f *Trigger, tol float64) []FieldDiff {
	var out []FieldDiff
	if !sameText(r.Tag, f.Tag, tol) {
		out = append(out, FieldDiff{"tag", strconv.Quote(r.Tag), strconv.Quote(f.Tag)})
	}
	if r.Severity != f.Severity {
		out = append(out, FieldDiff{"severity", strconv.Itoa(r.Severity), strconv.Itoa(f.Severity)})
	}
	if !sameWindow(r.PreNs, f.PreNs) {
		out = append(out, FieldDiff{"pre", fmtOptWindow(r.PreNs), fmtOptWindow(f.PreNs)})
	}
	if !sameWindow(r.PostNs, f.PostNs) {
		out = append(out, FieldDiff{"post", fmtOptWindow(r.PostNs), fmtOptWindow(f.PostNs)})
	}
	keys := make([]string, 0, len(r.Params)+len(f.Params))
	for k := range r.Params {
		keys = append(keys, k)
	}
	for k := range f.Params {
		if _, ok := r.Params[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		rv, rok := r.Params[k]
		fv, fok := f.Params[k]
		switch {
		case rok && fok && sameText(rv, fv, tol):
		case !rok:
			out = append(out, FieldDiff{"params." + k, "(absent)", strconv.Quote(fv)})
		case !fok:
			out = append(out, FieldDiff{"params." + k, strconv.Quote(rv), "(absent)"})
		default:
			out = append(out, FieldDiff{"params." + k, strconv.Quote(rv), strconv.Quote(fv)})
		}
	}
	return out
}

// Record returns the trigger as a live recorder records it in a dump's
// info, with the given id and source (the inverse of how RunRules reads a
// recorded trigger).
func (t *Trigger) Record(id uint64, source string) dumpinfo.Trigger {
	out := dumpinfo.Trigger{ID: id, Reason: t.Reason, Source: source, Rule: t.Rule, Tag: t.Tag, Severity: t.Severity,
		TimeNs: t.TimeNs, Params: t.Params}
	if t.PreNs != nil {
		out.PreNs, out.PreSet = *t.PreNs, true
	}
	if t.PostNs != nil {
		out.PostNs, out.PostSet = *t.PostNs, true
	}
	return out
}

// fmtWindow renders a trigger window; zero is a zero window.
func fmtWindow(ns int64) string { return time.Duration(ns).String() }

// numberRE finds the numbers inside a tag or parameter value.
var numberRE = regexp.MustCompile(`[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?`)

// sameText compares two texts: the numbers in them as numbers, within
// tol * max(1, |a|, |b|), and the text around them exactly. A duration
// ("3s", "1m30s") is compared as its length.
func sameText(a, b string, tol float64) bool {
	if a == b {
		return true
	}
	if da, err := time.ParseDuration(a); err == nil {
		if db, err := time.ParseDuration(b); err == nil {
			return da == db
		}
	}
	ia, ib := numberRE.FindAllStringIndex(a, 64), numberRE.FindAllStringIndex(b, 64)
	if len(ia) != len(ib) || len(ia) == 0 {
		return false
	}
	pa, pb := 0, 0
	for i := range ia {
		if a[pa:ia[i][0]] != b[pb:ib[i][0]] {
			return false
		}
		x, err1 := strconv.ParseFloat(a[ia[i][0]:ia[i][1]], 64)
		y, err2 := strconv.ParseFloat(b[ib[i][0]:ib[i][1]], 64)
		if err1 != nil || err2 != nil || !closeEnough(x, y, tol) {
			return false
		}
		pa, pb = ia[i][1], ib[i][1]
	}
	return a[pa:] == b[pb:]
}

// closeEnough reports |x-y| <= tol * max(1, |x|, |y|).
func closeEnough(x, y, tol float64) bool {
	if x == y {
		return true
	}
	return math.Abs(x-y) <= tol*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
}

// signed renders a time difference with its sign: "+500µs", "-2ms", "0s".
func signed(ns int64) string {
	if ns > 0 {
		return "+" + time.Duration(ns).String()
	}
	return time.Duration(ns).String()
}

func absNs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// WriteDiff writes a readable diff: "-" lines are recorded triggers the
// replay did not fire, "+" lines fired triggers that were not recorded,
// each with the nearest trigger of the same rule and reason on the other
// side; "!" lines triggers fired at the recorded time whose tag, severity,
// windows or params differ, each difference named; then the matches and
// what was not checked.
func (c *Comparison) WriteDiff(w io.Writer, fired []Trigger, recorded []Trigger) {
	fmt.Fprintf(w, "--- recorded in the dumps\n+++ fired by the replayed rules\n")
	type line struct {
		t    int64
		text string
	}
	var lines []line
	near := func(t Trigger, in []Trigger) string {
		best := -1
		for i, o := range in {
			if o.Rule == t.Rule && o.Reason == t.Reason && (best < 0 || absNs(o.TimeNs-t.TimeNs) < absNs(in[best].TimeNs-t.TimeNs)) {
				best = i
			}
		}
		if best < 0 {
			return "none of this rule and reason on the other side"
		}
		return fmt.Sprintf("nearest on the other side at %s (%s, tolerance %v)", in[best].Time, signed(in[best].TimeNs-t.TimeNs), c.Tolerance)
	}
	for _, t := range c.Missing {
		lines = append(lines, line{t.TimeNs, fmt.Sprintf("- %s %s at %s (%s): recorded, not fired; %s", t.Rule, t.Reason, t.Time, t.Source, near(t, fired))})
	}
	for _, t := range c.Unexpected {
		lines = append(lines, line{t.TimeNs, fmt.Sprintf("+ %s %s at %s: fired, not recorded; %s", t.Rule, t.Reason, t.Time, near(t, recorded))})
	}
	for _, ch := range c.Changed {
		var parts []string
		for _, d := range ch.Diffs {
			parts = append(parts, fmt.Sprintf("%s %s recorded, %s fired", d.Field, d.Recorded, d.Fired))
		}
		lines = append(lines, line{ch.Recorded.TimeNs, fmt.Sprintf("! %s %s at %s (%s): fired (%s) but differs: %s", ch.Recorded.Rule, ch.Recorded.Reason,
			ch.Recorded.Time, ch.Recorded.Source, signed(ch.Fired.TimeNs-ch.Recorded.TimeNs), strings.Join(parts, "; "))})
	}
	for _, p := range c.Matched {
		lines = append(lines, line{p.Recorded.TimeNs, fmt.Sprintf("  %s %s at %s: matched (%s)", p.Recorded.Rule, p.Recorded.Reason,
			p.Recorded.Time, signed(p.Fired.TimeNs-p.Recorded.TimeNs))})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].t < lines[j].t })
	for _, l := range lines {
		fmt.Fprintln(w, l.text)
	}
	for _, t := range c.Unchecked {
		fmt.Fprintf(w, "  (not checked: %s at %s, %s: no loaded rule made it)\n", strings.TrimSpace(t.Rule+" "+t.Reason), t.Time, t.Source)
	}
}

// sameWindow reports whether two optional windows are equal (both unset,
// or both set to the same duration).
func sameWindow(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// fmtOptWindow formats an optional window ("unset" when absent: the
// recorder's default applied).
func fmtOptWindow(p *int64) string {
	if p == nil {
		return "unset (the recorder's window)"
	}
	return fmtWindow(*p)
}
