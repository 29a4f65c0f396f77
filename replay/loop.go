package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// Closed-loop replay: the recorded inputs go to a system under test, what
// it publishes on the expected topics is collected by a private recorder
// (collect.go) and compared with the recorded outputs (feedcheck.go).

// Mode is what a closed-loop replay does (the reference's Full /
// InputOnly / OutputOnly).
type Mode int

const (
	// ModeFull publishes the recorded inputs, collects the outputs and
	// compares them with the recorded ones.
	ModeFull Mode = iota
	// ModeInputOnly publishes the recorded inputs and collects the outputs
	// (written with the inputs to LoopOptions.Record when set); nothing is
	// compared.
	ModeInputOnly
	// ModeOutputOnly re-emits the recorded outputs (the expected topics)
	// with their timing, for a downstream consumer or a viewer: no system
	// under test.
	ModeOutputOnly
)

var modeNames = [...]string{ModeFull: "full", ModeInputOnly: "input-only", ModeOutputOnly: "output-only"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses "full", "input-only" or "output-only".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: mode %q: want full, input-only or output-only", ErrOptions, s)
}

// Lockstep is how a closed-loop replay paces its inputs by the system
// under test.
type Lockstep int

const (
	// LockstepOff publishes inputs with their recorded timing (or as fast
	// as possible), whatever the system under test does.
	LockstepOff Lockstep = iota
	// LockstepAck releases each input after the previous ones were
	// acknowledged: one message per input on a topic matching
	// LoopOptions.Ack (an acknowledgement topic, or the node's own output
	// when it publishes one per input).
	LockstepAck
	// LockstepOutputs releases each input once the system under test has
	// published as many outputs as the recording holds before that input
	// (after the first input).
	LockstepOutputs
)

// DefaultLoopTimeout is LoopOptions.Timeout when 0.
const DefaultLoopTimeout = 2 * time.Second

// MaxMismatches bounds the mismatches a LoopResult lists; more are
// counted in LoopResult.MismatchesNotListed.
const MaxMismatches = 100000

// dynamicBytes bounds the payload kept of an output topic the recording
// does not hold (input-only): there is no recorded size to follow.
const dynamicBytes = 256 << 20

// settleQuiet is how long the outputs must stay quiet, once every expected
// topic has as many as recorded, before the collection ends.
const settleQuiet = 100 * time.Millisecond

// LoopOptions configure a closed-loop replay.
type LoopOptions struct {
	// Expect are globs (Options.Topics syntax, over the recorded names)
	// of the topics the system under test publishes: its outputs. Every
	// other replayed topic is an input. Each glob must match a topic of
	// the dumps, in every mode: one that matches none (a typo) is refused
	// rather than leaving the recorded output to be sent to the node as an
	// input.
	Expect []string
	// Collect, in ModeInputOnly, are globs of outputs the recording does
	// not hold (a dump of inputs alone): collected under the names the
	// system under test publishes, not compared. A glob that matches a
	// topic of the dumps is refused (that topic would be replayed as an
	// input and collected).
	Collect []string
	Mode    Mode
	// Listen is where the system under test publishes (its segment
	// directories, UDP addresses). Required for ModeFull and
	// ModeInputOnly.
	Listen []Listen
	// Timeout bounds the waits for the system under test: after the last
	// input, the collection ends once every expected topic has its
	// recorded count and nothing came for 100ms, or once nothing came for
	// Timeout (so always so when outputs the recording does not hold are
	// collected, unless lockstep by acknowledgement counts them); in
	// lockstep, a step waits at most Timeout for its answer.
	// DefaultLoopTimeout when 0.
	Timeout time.Duration
	// Lockstep paces the inputs by the system under test; Ack is the
	// acknowledgement topic glob of LockstepAck. An input topic of the
	// dumps that matches Ack is neither replayed nor compared.
	Lockstep Lockstep
	Ack      string
	// Checks are the FeedChecks, first match by topic wins; a topic
	// matched by none is compared exactly, aligned by sequence.
	Checks []Check
	// Schemas give the decoder of expected topics by recorded name
	// ("name" or "name#channel") to the checks that have none (a schema
	// given on the command line); else the dump's type may give one
	// (TypeDecoder).
	Schemas map[string]TopicSchema
	// Record, with ModeInputOnly (or ModeFull), writes the replayed
	// inputs and the collected outputs to this new dump (pack, or MCAP
	// when the name ends in .mcap), outputs at their replay time.
	Record string
	// Writer names the program in Record's header.
	Writer string
	// Node, when set, is the node under test the loop starts before the
	// first input (once it is ready), watches while it replays (a node
	// that exits fails the run with ErrNode, its exit status and the last
	// lines of its stderr) and stops at the end (ModeFull, ModeInputOnly).
	// Without Ready conditions it is ready once a segment of every
	// expected (and collected) topic exists in the first listened shm
	// directory.
	Node *NodeOptions
}

// TopicSchema is a topic's decoder and where it came from (for the
// report).
type TopicSchema struct {
	Decoder schema.Decoder
	From    string
}

// Loop is a closed-loop replay over one Player. Make it with NewLoop, run
// it once with Run; Player gives its controls (Pause, Step, Progress).
// Close after Run.
type Loop struct {
	p       *Player
	paths   []string
	opts    LoopOptions
	feeds   []*feed // feeds[0]: p; then each AddPlayer and AddLive
	exp     []*expTopic
	dynamic []string // input-only: LoopOptions.Collect (outputs collected under their own names)

	// filled while running (the player goroutine)
	released   int           // inputs released
	releaseNs  []int64       // wall-clock release time of each input
	inputTs    []int64       // message time of each input
	genIdx     map[int64]int // producer time of released inputs -> index of the last with it
	lastInTs   int64
	recSeen    []recRef // every recorded output read so far (lockstep by outputs)
	recCounted int      // of those, how many answer a released input (at the time they were read)
	recIn      []recIn  // with Record: every input released, copied
	coll       *collector
	m          Message // the message handed to the output (reused: a local would escape)
}

// feed is one player of a loop: its topics' routing and its output.
type feed struct {
	name string
	// by the player's topic index
	kind   []topicKind
	outIdx []int // input: index in inTopics; expected: index in Loop.exp
	// the inputs as the output sees them (Index renumbered)
	inTopics []Topic
	infos    []*ingest.TopicInfo // by inTopics index, for Record
	out      Output              // nil for the main player: Run's
	run      func(ctx context.Context, out Output) (Stats, error)
	live     bool
}

// recIn is an input released, kept for Record.
type recIn struct {
	info          *ingest.TopicInfo
	gen, done, at int64
	data          []byte
}

type topicKind uint8

const (
	kindInput topicKind = iota
	kindExpected
	kindDropped // matches the acknowledgement glob: neither replayed nor compared
	kindClock   // the clock topic (Options.ClockHz): published, not a step
)

// recRef is a recorded output as lockstep by outputs counts it.
type recRef struct {
	gen, ts int64
	counted bool
}

// expTopic is one expected topic: what was recorded, how to check it.
type expTopic struct {
	topic    *Topic // the player's
	check    *Check
	rec      []recOut
	recBytes atomic.Int64
}

// NewLoop opens the dumps at paths for a closed-loop replay. popts are the
// player's options (Loop is refused: a closed loop plays once); in
// ModeOutputOnly the player replays only the expected topics, otherwise
// the expected topics are read whatever popts.Topics says.
func NewLoop(paths []string, popts Options, lopts LoopOptions) (*Loop, error) {
	if err := lopts.check(); err != nil {
		return nil, err
	}
	if popts.Loop {
		return nil, fmt.Errorf("%w: a closed-loop replay plays the dumps once (no loop)", ErrOptions)
	}
	if lopts.Mode == ModeOutputOnly {
		if len(popts.Topics) > 0 {
			return nil, fmt.Errorf("%w: output-only replays the expected topics: give them with the expect globs, not topics", ErrOptions)
		}
		popts.Topics = lopts.Expect
	} else if len(popts.Topics) > 0 {
		popts.Topics = append(append([]string(nil), popts.Topics...), lopts.Expect...)
	}
	p, err := Open(paths, popts)
	if err != nil {
		return nil, err
	}
	l := &Loop{p: p, paths: paths, opts: lopts}
	err = l.classify()
	if err == nil {
		err = l.nodeReady()
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return l, nil
}

// nodeReady gives the node under test its default readiness: a segment
// of every expected topic (as the node publishes it) and of every
// collected name (a Collect glob without a pattern) in the first listened
// shm directory.
func (l *Loop) nodeReady() error {
	if l.opts.Node == nil || len(l.opts.Node.Ready) > 0 {
		return nil
	}
	dir := ""
	for _, ls := range l.opts.Listen {
		if ls.Shm != "" {
			dir = ls.Shm
			break
		}
	}
	var names []string
	for _, e := range l.exp {
		names = append(names, e.topic.String())
	}
	for _, g := range l.dynamic {
		if !strings.ContainsAny(g, "*?[\\") { // a name, not a pattern
			names = append(names, g)
		}
	}
	if dir == "" || len(names) == 0 || len(names) < len(l.exp)+len(l.dynamic) {
		return fmt.Errorf("%w: say when the node under test is ready (its outputs are not all named topics listened in a shm directory, whose segments would say it): a segment, a bound UDP port or a line it prints", ErrOptions)
	}
	no := *l.opts.Node
	no.Ready = nil
	for _, n := range names {
		no.Ready = append(no.Ready, Ready{SegmentDir: dir, Segment: n})
	}
	l.opts.Node = &no
	return nil
}

func (o *LoopOptions) check() error {
	if len(o.Expect) == 0 && len(o.Collect) == 0 {
		return fmt.Errorf("%w: no expected topic: say which topics the system under test publishes", ErrOptions)
	}
	if len(o.Collect) > 0 && o.Mode != ModeInputOnly {
		return fmt.Errorf("%w: collect names outputs the recording does not hold, for input-only: in %s mode there is nothing recorded to compare them with", ErrOptions, o.Mode)
	}
	for _, g := range append(append(append([]string(nil), o.Expect...), o.Collect...), o.Ack) {
		if _, err := pathMatch(g); err != nil {
			return err
		}
	}
	switch {
	case o.Mode < ModeFull || o.Mode > ModeOutputOnly:
		return fmt.Errorf("%w: mode %d", ErrOptions, o.Mode)
	case o.Timeout < 0:
		return fmt.Errorf("%w: negative timeout", ErrOptions)
	case o.Lockstep == LockstepAck && o.Ack == "":
		return fmt.Errorf("%w: lockstep by acknowledgement needs an acknowledgement topic", ErrOptions)
	case o.Lockstep != LockstepAck && o.Ack != "":
		return fmt.Errorf("%w: an acknowledgement topic is for lockstep by acknowledgement", ErrOptions)
	case o.Lockstep < LockstepOff || o.Lockstep > LockstepOutputs:
		return fmt.Errorf("%w: lockstep %d", ErrOptions, o.Lockstep)
	case o.Mode == ModeOutputOnly && (o.Lockstep != LockstepOff || o.Record != "" || len(o.Listen) > 0):
		return fmt.Errorf("%w: output-only re-emits the recording: no system under test to listen to, lock steps with or record", ErrOptions)
	case o.Mode != ModeOutputOnly && len(o.Listen) == 0:
		return fmt.Errorf("%w: nowhere to listen for the outputs of the system under test", ErrOptions)
	case o.Node != nil && o.Mode == ModeOutputOnly:
		return fmt.Errorf("%w: output-only re-emits the recording: no node under test to start", ErrOptions)
	}
	if o.Node != nil {
		if _, _, err := SplitCommand(o.Node.Command); err != nil {
			return err
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultLoopTimeout
	}
	for i := range o.Checks {
		if err := validateCheck(&o.Checks[i]); err != nil {
			return err
		}
	}
	return nil
}

// classify sorts the player's topics into inputs, expected and dropped,
// and picks each expected topic's check.
func (l *Loop) classify() error {
	tps := l.p.Topics()
	f := &feed{name: "main", kind: make([]topicKind, len(tps)), outIdx: make([]int, len(tps)), run: l.p.Run}
	l.feeds = []*feed{f}
	all := l.held()
	for i := range tps {
		t := &tps[i]
		rt := Topic{Name: t.recordedKey().name, Channel: t.Channel}
		switch {
		case l.p.clockStep > 0 && i == l.p.clockIdx:
			f.kind[i] = kindClock
		case len(l.opts.Expect) > 0 && matchTopic(l.opts.Expect, &rt):
			f.kind[i] = kindExpected
		case l.opts.Ack != "" && matchTopic([]string{l.opts.Ack}, &rt):
			f.kind[i] = kindDropped
		}
		switch f.kind[i] {
		case kindInput, kindClock:
			f.addInput(i, t)
		case kindExpected:
			ch, err := l.checkFor(t)
			if err != nil {
				return err
			}
			f.outIdx[i] = len(l.exp)
			l.exp = append(l.exp, &expTopic{topic: t, check: ch})
		}
	}
	for _, g := range l.opts.Expect {
		used := false
		for _, e := range l.exp {
			rt := Topic{Name: e.topic.recordedKey().name, Channel: e.topic.Channel}
			used = used || matchTopic([]string{g}, &rt)
		}
		if !used {
			hint := ""
			if l.opts.Mode == ModeInputOnly {
				hint = "; an output the recording does not hold is named with collect (--collect)"
			}
			return fmt.Errorf("%w: expect %s matches no topic of the dumps (they hold %s)%s", ErrOptions, g, strings.Join(all, ", "), hint)
		}
	}
	for _, g := range l.opts.Collect {
		for i := range tps {
			rt := Topic{Name: tps[i].recordedKey().name, Channel: tps[i].Channel}
			if matchTopic([]string{g}, &rt) {
				return fmt.Errorf("%w: collect %s matches %s, which the dumps hold: name a recorded output with expect (--expect), or leave the topic out (--exclude)",
					ErrOptions, g, tps[i].recordedString())
			}
		}
	}
	l.dynamic = l.opts.Collect
	if len(l.exp) == 0 && len(l.dynamic) == 0 {
		return fmt.Errorf("%w: expect %s matches no topic of the dumps (they hold %s)", ErrOptions,
			strings.Join(l.opts.Expect, ","), strings.Join(all, ", "))
	}
	if l.opts.Mode != ModeOutputOnly && len(f.inTopics) == 0 {
		return fmt.Errorf("%w: every topic of the dumps matches expect %s: no input to feed the system under test", ErrOptions,
			strings.Join(l.opts.Expect, ","))
	}
	for name := range l.opts.Schemas {
		found := false
		for _, e := range l.exp {
			found = found || name == e.topic.recordedString() || name == e.topic.recordedKey().name
		}
		if !found {
			return fmt.Errorf("%w: a schema is given for %s, which is not an expected topic", ErrOptions, name)
		}
	}
	return nil
}

// held lists the topics of the dumps as recorded ("name" or
// "name#channel"), sorted, whatever the selection: what an error about
// an expected topic says the dumps hold.
func (l *Loop) held() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l.p.sources {
		for _, t := range s.Topics() {
			n := mcap.TopicName(t.Name, t.Channel)
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// addInput routes player topic i (t) to the output, as its next input
// topic.
func (f *feed) addInput(i int, t *Topic) {
	f.outIdx[i] = len(f.inTopics)
	in := *t
	in.Index = len(f.inTopics)
	f.inTopics = append(f.inTopics, in)
	f.infos = append(f.infos, &ingest.TopicInfo{Name: t.Name, Channel: t.Channel, Type: t.Type})
}

// AddPlayer adds another player of dumps, whose topics are all inputs,
// published to out. The loop's player and this one must have turns of one
// Orchestrator (Options.Turn), which orders their messages (and, in
// lockstep, waits for the answer to each before the next of any player).
// Call before Run.
func (l *Loop) AddPlayer(p *Player, out Output) error {
	if err := l.addOK(p.opts.Turn); err != nil {
		return err
	}
	tps := p.Topics()
	f := &feed{name: fmt.Sprintf("player %d", len(l.feeds)), kind: make([]topicKind, len(tps)), outIdx: make([]int, len(tps)), out: out, run: p.Run}
	for i := range tps {
		rt := Topic{Name: tps[i].recordedKey().name, Channel: tps[i].Channel}
		if err := l.inputOnly(&rt, tps[i].recordedString()); err != nil {
			return err
		}
		f.addInput(i, &tps[i])
	}
	p.hold = func(ctx context.Context, ti int, ts, gen int64) (bool, error) { return l.holdFeed(ctx, f, ti, ts, gen) }
	l.feeds = append(l.feeds, f)
	return nil
}

// AddLive adds a live player (its datagrams are inputs, published to out)
// of the loop's Orchestrator. Call before Run.
func (l *Loop) AddLive(lv *LiveUDP, out Output) error {
	if err := l.addOK(lv.turn); err != nil {
		return err
	}
	if err := l.inputOnly(&lv.topics[0], lv.topics[0].String()); err != nil {
		return err
	}
	f := &feed{name: "live " + lv.opts.Addr, kind: []topicKind{kindInput}, outIdx: []int{0}, out: out, run: lv.Run, live: true}
	f.addInput(0, &lv.topics[0])
	lv.hold = func(ctx context.Context, ti int, ts, gen int64) (bool, error) { return l.holdFeed(ctx, f, ti, ts, gen) }
	l.feeds = append(l.feeds, f)
	return nil
}

// inputOnly checks that topic rt (named name) of another player is not an
// output: the expected topics come from the loop's dumps, and a collected
// one would take the inputs published for the node as its outputs.
func (l *Loop) inputOnly(rt *Topic, name string) error {
	if len(l.opts.Expect) > 0 && matchTopic(l.opts.Expect, rt) {
		return fmt.Errorf("%w: %s is expected: the expected topics come from the first dumps, another player only feeds inputs", ErrOptions, name)
	}
	if len(l.opts.Collect) > 0 && matchTopic(l.opts.Collect, rt) {
		return fmt.Errorf("%w: %s matches collect %s: another player's inputs would be collected as outputs", ErrOptions, name, strings.Join(l.opts.Collect, ","))
	}
	return nil
}

func (l *Loop) addOK(t *TurnToken) error {
	switch {
	case l.p.opts.Turn == nil:
		return fmt.Errorf("%w: several players need an orchestrator: give the loop's player a turn (Options.Turn)", ErrOptions)
	case t == nil || t.o != l.p.opts.Turn.o:
		return fmt.Errorf("%w: every player of a loop takes its turns from the loop's orchestrator", ErrOptions)
	case l.opts.Mode == ModeOutputOnly:
		return fmt.Errorf("%w: output-only re-emits the recorded outputs: no other player", ErrOptions)
	}
	return nil
}

// rate is the timeline's pace: the orchestrator's, or the player's.
func (l *Loop) rate() float64 {
	r := l.p.opts.Rate
	if t := l.p.opts.Turn; t != nil {
		r = t.o.rate
	}
	if r == 0 {
		r = 1 // as fast as possible: latencies map one to one
	}
	return r
}

// checkFor returns the check of expected topic t: the first whose glob
// matches, else exact by sequence. A tolerance check without a decoder
// takes the one the dump's type gives (TypeDecoder), or fails.
func (l *Loop) checkFor(t *Topic) (*Check, error) {
	name := t.recordedString()
	ch := &Check{Mode: CheckExact, Align: AlignSeq}
	for i := range l.opts.Checks {
		if l.opts.Checks[i].Matches(name) {
			c := l.opts.Checks[i]
			ch = &c
			break
		}
	}
	if ch.Decoder == nil {
		if s, ok := l.opts.Schemas[name]; ok {
			ch.Decoder, ch.Schema = s.Decoder, s.From
		} else if s, ok := l.opts.Schemas[t.recordedKey().name]; ok {
			ch.Decoder, ch.Schema = s.Decoder, s.From
		} else if d, how, err := typeDecoder(t); d != nil {
			ch.Decoder, ch.Schema = d, how
		} else if err != nil && ch.Mode == CheckTolerance {
			return nil, fmt.Errorf("%w: a tolerance check of %s needs its schema, and the dump's type %s does not give one: %v; give one for the topic", ErrOptions, name, t.Type, err)
		}
	}
	if ch.Mode == CheckTolerance && ch.Decoder == nil {
		return nil, fmt.Errorf("%w: a tolerance check of %s needs its schema (the dump gives none for type %q): give one for the topic", ErrOptions, name, t.Type)
	}
	return ch, nil
}

// TypeDecoder gives the decoder of a topic's messages from the type the
// dump records for it (its message encoding and schema: a packed layout,
// a protobuf descriptor set, JSON), so that a check names fields and a
// tolerance check needs no schema on the command line; how says where it
// came from ("the dump's type x-edr-packed own.Cmd"). ok is false for a
// topic of raw bytes or a type name alone, and for a schema that does not
// load. A schema given on the command line (LoopOptions.Schemas) or in a
// check wins over it.
func TypeDecoder(t *Topic) (d schema.Decoder, how string, ok bool) {
	d, how, _ = typeDecoder(t)
	return d, how, d != nil
}

// typeDecoder is TypeDecoder with the reason a recorded schema does not
// load (nil, "", nil: the type declares no encoding).
func typeDecoder(t *Topic) (schema.Decoder, string, error) {
	if !typed(t.Type) {
		return nil, "", nil
	}
	d, err := schema.NewDecoder(t.Type)
	if err != nil {
		return nil, "", err
	}
	return d, "the dump's type " + t.Type.String(), nil
}

// Player returns the player, for Pause, Resume, Step, Progress and Range.
func (l *Loop) Player() *Player { return l.p }

// Inputs returns the topics the loop's player publishes to the system
// under test (Index numbered among them): the topics the Output given to
// Run is opened with.
func (l *Loop) Inputs() []Topic { return l.feeds[0].inTopics }

// Close closes the dumps.
func (l *Loop) Close() error { return l.p.Close() }

// LatencyReport is a distribution of the time from an input's release to
// an output answering it (the output's arrival at the collector).
type LatencyReport struct {
	Samples uint64 `json:"samples"`
	P50Ns   int64  `json:"p50_ns"`
	P99Ns   int64  `json:"p99_ns"`
	MaxNs   int64  `json:"max_ns"`
}

func latencyOf(h *hist) LatencyReport {
	return LatencyReport{Samples: h.n, P50Ns: int64(h.quantile(0.5)), P99Ns: int64(h.quantile(0.99)), MaxNs: h.max}
}

// TopicReport is one expected topic's result.
type TopicReport struct {
	Topic     string `json:"topic"`               // as recorded
	Published string `json:"published,omitempty"` // as the system under test publishes it, when remapped
	Type      string `json:"type,omitempty"`      // as the system under test declared it
	Check     string `json:"check"`
	Align     string `json:"align"`
	Schema    string `json:"schema,omitempty"`
	Recorded  int    `json:"recorded"` // outputs recorded after the first input
	Got       int    `json:"got"`      // outputs published after the first input
	// BeforeFirstInput counts recorded outputs older than the first
	// replayed input (answers to inputs the dump does not hold) and
	// published ones collected before it: not compared.
	BeforeFirstInput     int `json:"before_first_input,omitempty"`
	PublishedBeforeFirst int `json:"published_before_first_input,omitempty"`
	// PublishedAfterEnd counts outputs whose replay time is after the end
	// of the recording (their recorded counterparts may lie beyond the
	// dump's window): not compared.
	PublishedAfterEnd int           `json:"published_after_end,omitempty"`
	Matched           int           `json:"matched"`
	Differing         int           `json:"differing"`
	Missing           int           `json:"missing"`
	Extra             int           `json:"extra"`
	NotKept           uint64        `json:"not_kept,omitempty"` // published beyond twice the recording: counted, not compared
	Lost              uint64        `json:"lost,omitempty"`     // overwritten in the collector's ring before it was read
	Latency           LatencyReport `json:"latency"`
}

// LoopResult is what a closed-loop replay found.
type LoopResult struct {
	Mode     string `json:"mode"`
	OK       bool   `json:"ok"`
	Lockstep string `json:"lockstep"`
	Inputs   int    `json:"inputs"` // input messages released (steps)
	// Stats are the player's (timing error of the inputs, or in
	// ModeOutputOnly of the re-emitted outputs).
	Stats Stats `json:"-"`
	// Timing is Stats' timing error, for the JSON form.
	Timing              LatencyReport `json:"timing_error"`
	Latency             LatencyReport `json:"latency"` // every output, from its input's release
	Topics              []TopicReport `json:"topics,omitempty"`
	Mismatches          []Mismatch    `json:"mismatches"`
	MismatchesNotListed int           `json:"mismatches_not_listed,omitempty"`
	Record              string        `json:"record,omitempty"`
	Warnings            []string      `json:"warnings,omitempty"`
	// Node is what became of the node under test (LoopOptions.Node).
	Node *NodeReport `json:"node,omitempty"`
	// Error is why the run failed, when it did (set by the caller: an
	// error of NewLoop or Run, mismatches, outputs lost).
	Error string `json:"error,omitempty"`
}

// ErrLockstep is returned when the system under test did not acknowledge
// a step within the timeout.
var ErrLockstep = errors.New("replay: lockstep: the system under test did not answer in time")

var lockstepNames = [...]string{LockstepOff: "off", LockstepAck: "ack", LockstepOutputs: "outputs"}

// Run plays the loop to out (opened with Inputs; in ModeOutputOnly with
// the expected topics), until the dumps end or ctx is cancelled (a clean
// stop: the result so far and ctx's error). In ModeFull the result's OK
// says whether the outputs matched; ErrMismatch is not returned, the
// caller decides.
func (l *Loop) Run(ctx context.Context, out Output) (*LoopResult, error) {
	res := &LoopResult{Mode: l.opts.Mode.String(), Lockstep: lockstepNames[l.opts.Lockstep], Mismatches: []Mismatch{}}
	if l.opts.Mode == ModeOutputOnly {
		st, err := l.p.Run(ctx, out)
		res.Stats, res.Timing, res.OK = st, timingOf(&st), err == nil
		return res, err
	}
	caps := make([]func() topicCap, len(l.exp))
	names := make([]string, len(l.exp))
	for i, e := range l.exp {
		names[i] = e.topic.String()
		n := int(min(e.topic.Messages, 1<<30))
		caps[i] = func() topicCap { return topicCap{n: 2*n + 64, bytes: 2*e.recBytes.Load() + 1<<20} }
	}
	var inputs uint64
	for _, f := range l.feeds {
		for _, t := range f.inTopics {
			inputs += t.Messages
		}
	}
	var nd *node
	if l.opts.Node != nil {
		var err error
		if nd, err = launchNode(ctx, *l.opts.Node); err != nil {
			if nd != nil {
				res.Node = &nd.rep
			}
			return res, err
		}
		var stopWatch func()
		ctx, stopWatch = watchNode(ctx, nd)
		defer stopWatch()
		defer func() {
			if res.Node == nil { // an early return: stop it all the same
				rep := nd.stop()
				res.Node = &rep
			}
		}()
	}
	coll, err := newCollector(collectorOptions{listen: l.opts.Listen, expect: names, caps: caps, ackGlob: l.opts.Ack,
		dynamic: l.dynamic, dynCap: topicCap{n: int(min(4*inputs+64, 1<<30)), bytes: dynamicBytes}})
	if err != nil {
		return res, err
	}
	l.coll = coll
	l.genIdx = map[int64]int{}
	main := l.feeds[0]
	main.out = out
	if l.opts.Lockstep != LockstepOff {
		l.p.hold = func(ctx context.Context, ti int, ts, gen int64) (bool, error) {
			return l.holdFeed(ctx, main, ti, ts, gen)
		}
	}
	st, runErr := l.runFeeds(ctx)
	res.Stats, res.Timing, res.Inputs = st, timingOf(&st), l.released
	if runErr == nil {
		runErr = l.settle(ctx)
	}
	got, dyn, warnings := coll.finish()
	res.Warnings = warnings
	if nd != nil {
		runErr = l.endNode(nd, res, runErr, inputs)
	}
	l.report(res, got, dyn)
	if nd != nil && !res.Node.Exited {
		for _, tr := range res.Topics {
			if tr.Got == 0 && (tr.Recorded > 0 || tr.Check == "-") {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: the node under test ran for the whole replay and published nothing on it (silent, not crashed)", tr.Topic))
			}
		}
	}
	if l.opts.Record != "" && (runErr == nil || errors.Is(runErr, context.Canceled)) {
		if err := l.writeRecord(got, dyn); err != nil {
			return res, err
		}
		res.Record = l.opts.Record
	}
	return res, runErr
}

// errNodeExited is the cause of a run cancelled by the node's exit.
var errNodeExited = errors.New("the node under test exited")

// watchNode returns a context cancelled (cause errNodeExited) when the
// node exits, and the function that stops watching (it returns once the
// watcher has).
func watchNode(ctx context.Context, nd *node) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-nd.Done():
			cancel(errNodeExited)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		close(stop)
		<-done
		cancel(nil)
	}
}

// endNode stops the node under test once the loop is done with it, or
// reports that it exited before (a crash: runErr says so, with its exit
// status and the last lines of its stderr, unless the run failed of
// something else first).
func (l *Loop) endNode(nd *node, res *LoopResult, runErr error, inputs uint64) error {
	select {
	case <-nd.Done():
	default:
		rep := nd.stop()
		res.Node = &rep
		return runErr
	}
	rep := nd.exited(l.released)
	res.Node = &rep
	if runErr == nil || errors.Is(runErr, context.Canceled) || errors.Is(runErr, ErrLockstep) {
		return fmt.Errorf("%w: %s exited during the replay (%s) after %d of %d inputs%s", ErrNode, rep.Command, rep.Exit,
			l.released, inputs, tailText(rep.Stderr))
	}
	return runErr
}

// runFeeds runs every player: the loop's on this goroutine, the others on
// their own; live players until the players of dumps are done. It returns
// the loop's player's stats and the first error.
func (l *Loop) runFeeds(ctx context.Context) (Stats, error) {
	if len(l.feeds) == 1 {
		return l.p.Run(ctx, &routeOut{l: l, f: l.feeds[0]})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	var dumps, lives sync.WaitGroup
	errs := make([]error, len(l.feeds))
	for i, f := range l.feeds[1:] {
		wg := &dumps
		fctx := ctx
		if f.live {
			wg, fctx = &lives, liveCtx
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.run(fctx, &routeOut{l: l, f: f}); err != nil && !errors.Is(err, context.Canceled) {
				errs[i+1] = fmt.Errorf("%s: %w", f.name, err)
				cancel()
			}
		}()
	}
	st, err := l.p.Run(ctx, &routeOut{l: l, f: l.feeds[0]})
	errs[0] = err
	dumps.Wait()
	stopLive()
	lives.Wait()
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return st, e
		}
	}
	return st, err
}

func timingOf(st *Stats) LatencyReport {
	return LatencyReport{Samples: st.Samples, P50Ns: int64(st.TimingP50), P99Ns: int64(st.TimingP99), MaxNs: int64(st.TimingMax)}
}

// routeOut is the Output a player writes to in a closed loop: inputs go
// to its feed's output (topics renumbered), recorded outputs are kept for
// the comparison, dropped topics go nowhere. With several players, only
// the one holding the orchestrator's turn writes: the loop's state is
// touched by one goroutine at a time.
type routeOut struct {
	l *Loop
	f *feed
}

func (o *routeOut) Open([]Topic) error { return o.f.out.Open(o.f.inTopics) }
func (o *routeOut) Close() error       { return o.f.out.Close() }

func (o *routeOut) Write(m *Message) error {
	l, f := o.l, o.f
	ti := m.Topic.Index
	switch f.kind[ti] {
	case kindClock:
		l.m = *m
		l.m.Topic = &f.inTopics[f.outIdx[ti]]
		return f.out.Write(&l.m)
	case kindInput:
		l.m = *m
		l.m.Topic = &f.inTopics[f.outIdx[ti]]
		at := time.Now().UnixNano() // before: the answer may be collected before Write returns
		err := f.out.Write(&l.m)
		if m.GenNs != 0 {
			l.genIdx[m.GenNs] = l.released
		}
		ts := max(m.TimeNs, l.lastInTs) // a live message may come a little before the last turn's time
		l.released++
		l.releaseNs = append(l.releaseNs, at)
		l.inputTs = append(l.inputTs, ts)
		l.lastInTs = ts
		if l.opts.Record != "" {
			done := m.DoneNs
			if done == 0 {
				done = m.TimeNs
			}
			l.recIn = append(l.recIn, recIn{info: f.infos[f.outIdx[ti]], gen: m.GenNs, done: done, at: ts, data: append([]byte(nil), m.Data...)})
		}
		return err
	case kindExpected:
		e := l.exp[f.outIdx[ti]]
		e.rec = append(e.rec, recOut{timeNs: m.TimeNs, genNs: m.GenNs, data: append([]byte(nil), m.Data...)})
		e.recBytes.Add(int64(len(m.Data)))
		if l.opts.Lockstep == LockstepOutputs {
			r := recRef{gen: m.GenNs, ts: m.TimeNs, counted: l.stepOf(m.GenNs, m.TimeNs) > 0}
			l.recSeen = append(l.recSeen, r)
			if r.counted {
				l.recCounted++
			}
		}
	}
	return nil
}

// stepOf attributes an output (its producer and message time) to an input
// step among the inputs released so far: the input carrying the same
// producer time, when there is one (a node that stamps its answer with
// the time of the input, as the example nodes and ROS headers do);
// otherwise the last input at or before it in time (an output at the same
// time as an input answers that input). 0: before the first input.
func (l *Loop) stepOf(gen, ts int64) int {
	if gen != 0 {
		if i, ok := l.genIdx[gen]; ok {
			return i + 1
		}
	}
	return sort.Search(len(l.inputTs), func(j int) bool { return l.inputTs[j] > ts })
}

// holdFeed is a player's lockstep gate, called before each message of
// feed f (inside its turn when there are several players): an input waits
// until the system under test answered every input released before it,
// by any player.
func (l *Loop) holdFeed(ctx context.Context, f *feed, ti int, ts, gen int64) (waited bool, err error) {
	if l.opts.Lockstep == LockstepOff || f.kind[ti] != kindInput || l.released == 0 {
		return false, nil
	}
	want := l.released
	what := "acknowledgement(s) on " + l.opts.Ack
	cond := func(outputs, acks int, _ int64) bool { return acks >= want }
	if l.opts.Lockstep == LockstepOutputs {
		want, what = l.outputsBefore(ts, gen), "output(s) on the expected topics"
		cond = func(outputs, acks int, _ int64) bool { return outputs >= want }
	}
	ok, err := l.coll.waitUntil(ctx, time.Now().Add(l.opts.Timeout), cond)
	if err != nil {
		return true, err
	}
	if !ok {
		outs, acks, _ := l.coll.counts()
		have := acks
		if l.opts.Lockstep == LockstepOutputs {
			have = outs
		}
		return true, fmt.Errorf("%w: step %d (the input at %s): %d of %d %s within %v", ErrLockstep, l.released,
			fmtNs(l.lastInTs), have, want, what, l.opts.Timeout)
	}
	return true, nil
}

// outputsBefore is how many recorded outputs answer the inputs released
// so far, before the input at ts (producer time gen) is released: those
// read so far, but not the ones that answer the held input itself (the
// same producer time, or the same message time: recorders stamp capture
// times per batch, so an answer may carry its input's time and be read
// before it). The outputs read since the last released input are
// attributed again, now that more inputs are known.
func (l *Loop) outputsBefore(ts, gen int64) int {
	n := l.recCounted
	for i := len(l.recSeen) - 1; i >= 0 && l.recSeen[i].ts >= l.lastInTs; i-- {
		r := l.recSeen[i]
		now := l.stepOf(r.gen, r.ts) > 0 && !(gen != 0 && r.gen == gen) && r.ts != ts
		switch {
		case r.counted && !now:
			n--
		case !r.counted && now:
			n++
		}
	}
	return n
}

// settle waits, after the last input, for the outputs: until every
// expected topic has its recorded count (and lockstep its acknowledgements)
// and nothing came for settleQuiet, or nothing came for Timeout.
func (l *Loop) settle(ctx context.Context) error {
	want := 0
	for _, e := range l.exp {
		for _, r := range e.rec {
			if l.stepOf(r.genNs, r.timeNs) > 0 {
				want++
			}
		}
	}
	wantAcks := 0
	if l.opts.Lockstep == LockstepAck {
		wantAcks = l.released
	}
	quiet := settleQuiet
	if len(l.dynamic) > 0 && wantAcks == 0 {
		// outputs the recording does not hold: how many will come is
		// unknown, only a quiet Timeout ends the wait
		quiet = l.opts.Timeout
	}
	endNs := time.Now().UnixNano()
	for {
		outs, acks, last := l.coll.counts()
		act := max(last, endNs)
		enough := outs >= want && acks >= wantAcks
		idle := time.Duration(time.Now().UnixNano() - act)
		if (enough && idle >= quiet) || idle >= l.opts.Timeout {
			return nil
		}
		until := act + int64(l.opts.Timeout)
		if enough {
			until = act + int64(quiet)
		}
		if _, err := l.coll.waitUntil(ctx, time.Unix(0, until), func(_, _ int, newest int64) bool { return newest > last }); err != nil {
			return err
		}
	}
}

// report compares (ModeFull) and fills res.
func (l *Loop) report(res *LoopResult, got map[int]*collected, dyn []*collected) {
	all := &hist{}
	var firstNs int64
	if len(l.inputTs) > 0 {
		firstNs = l.inputTs[0]
	}
	_, endNs := l.p.Range()
	add := func(m Mismatch) {
		if len(res.Mismatches) < MaxMismatches {
			res.Mismatches = append(res.Mismatches, m)
		} else {
			res.MismatchesNotListed++
		}
	}
	for i, e := range l.exp {
		tr := TopicReport{Topic: e.topic.recordedString(), Check: e.check.Mode.String(), Align: e.check.Align.String(), Schema: e.check.Schema}
		if e.topic.Recorded != "" {
			tr.Published = e.topic.String()
		}
		var rec []recOut
		for _, r := range e.rec {
			if r.step = l.stepOf(r.genNs, r.timeNs); r.step == 0 {
				tr.BeforeFirstInput++
				continue
			}
			r.seq, r.lat = len(rec), r.timeNs-l.inputTs[r.step-1]
			rec = append(rec, r)
		}
		pub := l.published(got[i], &tr, all)
		tr.Recorded, tr.Got = len(rec), len(pub)
		if l.opts.Mode == ModeFull {
			c := &comparer{ch: e.check, topic: tr.Topic, firstNs: firstNs, endNs: endNs}
			differing := map[int]bool{}
			c.add = func(m Mismatch) {
				switch m.Kind {
				case "missing":
					tr.Missing++
				case "extra":
					tr.Extra++
				default:
					differing[m.Seq] = true
				}
				add(m)
			}
			c.run(rec, pub)
			tr.PublishedAfterEnd = c.afterEnd
			tr.Differing = len(differing)
			tr.Matched = c.paired - tr.Differing
			if tr.NotKept > 0 {
				add(Mismatch{Topic: tr.Topic, Kind: "extra", Seq: len(pub), Offset: "-",
					Expected: "at most " + strconv.Itoa(2*len(e.rec)+64) + " outputs kept", Got: strconv.FormatUint(tr.NotKept, 10) + " more, not compared"})
				tr.Extra += int(min(tr.NotKept, 1<<30))
			}
		}
		res.Topics = append(res.Topics, tr)
	}
	for _, c := range dyn {
		tr := TopicReport{Topic: pack.Topic(c.info.Name, c.info.Channel), Check: "-", Align: "-"}
		tr.Topic = strings.TrimSuffix(tr.Topic, "#")
		tr.Got = len(l.published(c, &tr, all))
		res.Topics = append(res.Topics, tr)
	}
	res.Latency = latencyOf(all)
	res.OK = l.opts.Mode != ModeFull || (len(res.Mismatches) == 0 && res.MismatchesNotListed == 0)
	if l.opts.Mode == ModeFull {
		for _, tr := range res.Topics {
			if tr.Lost > 0 {
				res.OK = false
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %d outputs lost in the collector's ring (not compared)", tr.Topic, tr.Lost))
			}
		}
	}
}

// published turns what was collected on one topic into outputs to
// compare: each is attributed to the last input released before it
// arrived (its step), with its latency from that release and its replay
// time (the step's recorded time plus the latency, scaled by the rate).
// Outputs that arrived before the first input are counted in tr, not
// returned.
func (l *Loop) published(c *collected, tr *TopicReport, all *hist) []pubOut {
	if c == nil {
		return nil
	}
	tr.Type, tr.NotKept, tr.Lost = c.info.Type.Schema.Name, c.extra, c.lost
	pub, before := l.attribute(c)
	tr.PublishedBeforeFirst = before
	h := &hist{}
	for i := range pub {
		h.add(pub[i].lat)
		all.add(pub[i].lat)
	}
	tr.Latency = latencyOf(h)
	return pub
}

// attribute gives each output collected on one topic its input step (the
// released input with the same producer time, else the last released
// before it arrived), its latency from that input's release and its replay
// time (the step's recorded time plus the latency, scaled by the rate,
// never going back within the topic: the order of arrival is the order
// published). before counts outputs that arrived before the first input.
func (l *Loop) attribute(c *collected) (pub []pubOut, before int) {
	rate := l.rate()
	last := int64(math.MinInt64)
	for _, g := range c.msgs {
		k := 0
		if i, ok := l.genIdx[g.GenNs]; ok && g.GenNs != 0 && l.releaseNs[i] <= g.CaptureNs {
			k = i + 1
		} else {
			k = sort.Search(len(l.releaseNs), func(j int) bool { return l.releaseNs[j] > g.CaptureNs })
		}
		if k == 0 {
			before++
			continue
		}
		lat := g.CaptureNs - l.releaseNs[k-1]
		t := max(l.inputTs[k-1]+int64(float64(lat)*rate), last)
		last = t
		pub = append(pub, pubOut{seq: len(pub), step: k, timeNs: t, genNs: g.GenNs, lat: lat, data: g.Data})
	}
	return pub, before
}

// pathMatch checks a glob (path.Match syntax).
func pathMatch(g string) (bool, error) {
	if _, err := path.Match(g, ""); err != nil {
		return false, fmt.Errorf("%w: topic glob %q: %v", ErrOptions, g, err)
	}
	return true, nil
}
