package scripts

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/schema"
)

// Message is one message as a rule sees it.
type Message struct {
	// Topic is the topic name, e.g. "vehicle/speed".
	Topic string
	// TS is the capture time in UNIX ns. A rule whose time is TimeCapture
	// sees it as m.ts and now(); a TimeProducer rule (the default) sees
	// GenTS instead when the producer gave one.
	TS int64
	// GenTS is the generation time the source reported (0 when unknown).
	GenTS int64
	// Seq is the per-topic sequence number.
	Seq uint64
	// Data is the payload. Rules never keep it past the callback. (Live
	// copies a message's payload out of the ring only when its rule reads
	// the bytes: lazy below.)
	Data []byte
	// Type is the message's type (encoding and schema), nil or raw when
	// the topic declares none: m.speed and m:f("wheel[2]") read fields by
	// name through it. The pointer identifies the type: the same pointer
	// for every message of one type (a rule compiles a path once per
	// pointer), a new one when the topic's type changes; the Type it
	// points to must not change while rules run.
	Type *ingest.Type

	// lazy, set by Live, leaves the payload in the recorder's ring until
	// the rule reads it (Rule.data): Data is then empty and size is the
	// payload's length. A rule that never reads a topic's bytes (m.ts,
	// m.topic, m.size only) copies none of them.
	lazy *engine.Reader
	size int
}

// length is the payload's length, copied or not.
func (m *Message) length() int {
	if m.lazy != nil {
		return m.size
	}
	return len(m.Data)
}

// data returns m's payload, copying it from the ring on the first read.
// A payload the ring overwrote before this read is not returned: ok is
// false and r.torn is set, and Feed counts the message as skipped (as the
// reader would have, had it copied the payload when it read the message).
func (r *Rule) data(m *Message) (b []byte, ok bool) {
	if m.lazy != nil {
		rd := m.lazy
		m.lazy = nil
		if m.Data, ok = rd.CopyPayload(m.Data); !ok {
			r.torn = true
			return nil, false
		}
	}
	return m.Data, true
}

// Trigger is what a rule's trigger{...} hands to Options.OnTrigger.
type Trigger struct {
	// Rule is the declaring rule's name.
	Rule string
	// Reason defaults to the rule name; at most MaxReason bytes (a longer
	// one is cut and ends with Truncated).
	Reason string
	// Tag is free text from the rule ("" when none); at most MaxTag
	// bytes, cut like Reason.
	Tag string
	// Severity defaults to 1.
	Severity int
	// TimeNs is the capture time the trigger fired at: the capture time of
	// the message being handled, or for a tick (and a TimeProducer rule's
	// at = <time>) the rule's time mapped to capture time through its
	// latest message.
	TimeNs int64
	// At is dumpinfo.AtLast ("last") when the rule asked for the dump to
	// be anchored at the newest message of its topics; "" otherwise.
	At string
	// Pre and Post are the history to keep before and the time to keep
	// recording after TimeNs; nil means the recorder's (the topics')
	// windows, zero is zero.
	Pre, Post *time.Duration
	// Topics restricts the dump to these topic globs; nil means all.
	Topics []string
	// Params are the rule's effective parameters, within MaxParams,
	// MaxParamName and MaxParamValue (bounds.go); shared between the
	// triggers of one rule: do not modify.
	Params map[string]string
}

// DumpResult tells rules that a dump finished (on_dump_finished).
type DumpResult struct {
	Path     string
	Reason   string
	Bytes    int64
	Messages int64
	// TimeNs is when the dump finished (capture time); 0 keeps the rules'
	// current time.
	TimeNs int64
	// Status is the outcome ("written", "failed", "refused",
	// "abandoned"); Err is non-nil when the dump was not written.
	Status string
	Err    error
}

// Options configure a rule at load.
type Options struct {
	// Params are configuration values for the rule, read by the script
	// through param(name, default) or the read-only params table.
	Params map[string]string
	// Budget bounds the rule; zero fields take defaults.
	Budget Budget
	// OnTrigger receives every trigger that passes the rule's cooldown and
	// rate limit. It runs on the rule's goroutine, inside the callback.
	OnTrigger func(Trigger)
	// Logger receives log(...) lines and rule failures; nil means
	// slog.Default().
	Logger *slog.Logger
	// Time, when set (TimeProducer, TimeCapture or TimeEvent), overrides
	// the time domain the rule declares.
	Time string
	// Name, when set, replaces the name the rule declares: a second
	// instance of one rule file runs under a name of its own.
	Name string
}

// Time domains a rule can run in (Decl.Time, Options.Time).
const (
	// TimeProducer: message time is the producer's time (m.gen_ts) when the
	// message has one, else its capture time. Replay jitter, batching and
	// a loaded recorder then cannot change what a rule computes from time
	// differences. The default.
	TimeProducer = "producer"
	// TimeCapture: message time is the recorder's capture time (for rules
	// about what the recorder sees, such as a heartbeat).
	TimeCapture = "capture"
	// TimeEvent: message time is the time the message's data describes,
	// read from the field of its type the rule names (Decl.EventTime, a
	// field path, with Decl.EventTimeUnit; schema.NewEventTime); the
	// producer's time, else the capture time, for a message that does not
	// hold it (a raw topic, a short message).
	TimeEvent = "event"
)

// Decl is a rule's declaration: rule{...} plus its parameters.
type Decl struct {
	Name   string
	Topics []string
	// Pre and Post are the rule's windows; nil means the recorder's (the
	// topics' own), zero is zero.
	Pre, Post *time.Duration
	// Time is the rule's time domain: TimeProducer, TimeCapture or
	// TimeEvent.
	Time string
	// EventTime and EventTimeUnit name the field TimeEvent reads
	// (rule{ event_time = "header.stamp", event_time_unit = "stamp" }).
	EventTime, EventTimeUnit string
	Cooldown                 time.Duration
	MaxPerMinute             int
	// Tick is the on_tick period (1s when on_tick is defined and tick is
	// not declared; 0 when there is no on_tick).
	Tick time.Duration
	// Params are the effective parameters: declared defaults overridden by
	// configuration, as strings.
	Params map[string]string
}

// RuleStatus is a snapshot of one rule's counters.
type RuleStatus struct {
	Name string `json:"name"`
	// File is the path or chunk name the rule was loaded from.
	File     string   `json:"file"`
	Topics   []string `json:"topics"`
	Messages uint64   `json:"messages"` // on_message calls
	Ticks    uint64   `json:"ticks"`    // on_tick calls
	// TicksSkipped counts ticks not delivered because message time jumped
	// further than MaxCatchUpTicks ticks.
	TicksSkipped       uint64 `json:"ticks_skipped"`
	Errors             uint64 `json:"errors"`
	TriggersFired      uint64 `json:"triggers_fired"`
	TriggersSuppressed uint64 `json:"triggers_suppressed"` // by cooldown or max_per_minute
	LogsDropped        uint64 `json:"logs_dropped"`
	Instructions       uint64 `json:"instructions"`
	// Skipped counts messages a live reader skipped because the rule fell
	// behind the ring; LagNs is how far behind the newest message the rule
	// was at its last read.
	Skipped uint64 `json:"skipped"`
	LagNs   int64  `json:"lag_ns"`
	// CallNs is how long the rule has been inside its current callback
	// (0 when it is not running one); Stuck is set once that passes
	// StuckAfter: a callback within the default budget takes milliseconds.
	CallNs   int64 `json:"call_ns"`
	Stuck    bool  `json:"stuck"`
	Disabled bool  `json:"disabled"`
	// Why says why the rule is disabled, naming file and line.
	Why         string `json:"why,omitempty"`
	Reloads     uint64 `json:"reloads"`
	ReloadError string `json:"reload_error,omitempty"`
}

// StuckAfter is how long a callback may run before Status calls the rule
// stuck. The instruction budget bounds a callback to milliseconds with the
// defaults; a rule given a much larger budget (or a bug in a library
// function) can stay inside one call for longer.
const StuckAfter = time.Second

// monoStart anchors callStart: time.Since reads the monotonic clock.
var monoStart = time.Now()

// MaxCatchUpTicks bounds how many due ticks one Feed or Tick delivers when
// message time jumps; older ones are counted as skipped.
const MaxCatchUpTicks = 1000

// walkEvery is how many instructions may run between two walks of a
// rule's state for the memory budget.
const walkEvery = 256 << 10

// stats are a rule's counters, kept across reloads. Safe for concurrent use.
type stats struct {
	messages, ticks, ticksSkipped, errors  atomic.Uint64
	fired, suppressed, logsDropped, instrs atomic.Uint64
	skipped, reloads                       atomic.Uint64
	lag                                    atomic.Int64
	// The callback running now, without a clock read per call (on this
	// kind of VM one costs as much as a tenth of a short rule): callSeq is
	// 2*calls+1 inside a callback and even outside; a callback that has run
	// stampAfter instructions is stamped (stampSeq = its callSeq, stamp =
	// monotonic ns since monoStart), and Status times one that is not (it
	// sits in a Go function) from when Status first saw it (seenSeq,
	// seenAt, under mu). CallNs is thus short by at most the time of
	// stampAfter instructions, or by the time until Status first looked.
	callSeq, stampSeq atomic.Uint64
	stamp             atomic.Int64
	seenSeq           uint64
	seenAt            int64

	mu        sync.Mutex
	disabled  bool
	why       string
	reloadErr string
}

// Rule is one loaded rule: a sandboxed Lua state with its declaration.
//
// A Rule is not safe for concurrent use, except Status which may be called
// from any goroutine. Feed, Tick, DumpFinished and Close must come from one
// goroutine at a time.
type Rule struct {
	decl   Decl
	file   string
	src    string
	opts   Options
	budget Budget
	logger *slog.Logger

	L          *lua.LState
	meter      *meter
	calls      uint64 // callbacks run (stats.callSeq; carried across reloads)
	nums       numBox
	view       *lua.LUserData
	methods    *lua.LTable // the view's __index
	usedFields uint8       // bit i: viewFields[i] is named in the script
	onMessage  *lua.LFunction
	onTick     *lua.LFunction
	onDump     *lua.LFunction

	cur *Message
	// fields by name (fields.go): what the rule knows of each type, and
	// of the current message's
	types     map[*ingest.Type]*typeFields
	curType   *ingest.Type
	curFields *typeFields
	// string constants of the script that may name fields, and the fields
	// of storedType stored in the methods table (storeTyped)
	usedNames  []string
	storedType *ingest.Type
	storedSet  bool
	storedList []storedField
	// now is the rule's time (its time domain); capOff maps it to capture
	// time: capture time of the latest message minus its rule time.
	now      int64
	capOff   int64
	shipped  bool // loaded by LoadShipped: reloads read the embedded file
	topicStr string
	topicVal lua.LValue
	topicSet bool // topicVal is stored in the view's methods table

	loading    bool
	declared   bool
	paramSet   map[string]bool   // names declared with param()
	trigParams map[string]string // decl.Params within the bounds of what a trigger records (bounds.go)
	declFailed bool              // the load error came from rule{} or param()
	dead       bool
	closed     bool
	// torn: the current message's payload was overwritten in the ring
	// before the rule read it (Rule.data)
	torn bool

	// cooldown and rate limit, in message time
	fired    bool
	lastFire int64
	window   []int64 // ring of the last MaxPerMinute fire times
	wpos     int

	logTokens float64
	logAt     int64

	nextTick int64 // 0 until the first event

	lastTopic string
	lastMatch bool
	match     map[string]bool

	st *stats
}

// Load reads a rule file and loads it; see LoadSource.
func Load(path string, opts Options) (*Rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	return LoadSource(path, string(b), opts)
}

// LoadSource compiles and runs a rule's top level in a fresh sandbox. name
// is used in error messages ("name:line: ...") and should be the file path.
// Errors wrap ErrTooLarge, ErrSyntax, ErrDeclaration, ErrRuntime or
// ErrBudget.
func LoadSource(name, src string, opts Options) (*Rule, error) {
	if len(src) > MaxSourceBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrTooLarge, name, len(src), MaxSourceBytes)
	}
	r := &Rule{file: name, src: src, opts: opts, budget: opts.Budget.withDefaults(), st: &stats{}}
	r.logger = opts.Logger
	if r.logger == nil {
		r.logger = slog.Default()
	}
	r.meter = &meter{maxString: r.budget.MaxString, memory: r.budget.Memory}
	r.L = newSandbox(r.budget, r.meter)
	r.meter.L = r.L
	r.L.SetContext(r.meter)
	r.logTokens = float64(r.budget.LogPerSecond)
	r.paramSet = map[string]bool{}
	r.decl.Params = map[string]string{}
	r.installAPI()
	if err := r.load(); err != nil {
		r.L.Close()
		return nil, err
	}
	return r, nil
}

// compile parses and compiles the source; a panic in gopher-lua's parser
// or compiler becomes a syntax error rather than taking the recorder down.
func (r *Rule) compile() (fn *lua.LFunction, err error) {
	defer func() {
		if p := recover(); p != nil {
			fn, err = nil, fmt.Errorf("%s: the Lua compiler failed: %v", r.file, p)
		}
	}()
	return r.L.Load(strings.NewReader(r.src), r.file)
}

func (r *Rule) load() error {
	L := r.L
	fn, err := r.compile()
	if err != nil {
		return fmt.Errorf("%w: %s", ErrSyntax, strings.Join(strings.Fields(luaMessage(err)), " "))
	}
	if err := checkMultiAssign(r.file, r.src); err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	r.findUsedFields(fn.Proto)
	r.loading = true
	err = r.call(fn, r.budget.Instructions*LoadFactor, nil)
	r.loading = false
	if err != nil && r.declFailed {
		return fmt.Errorf("%w: %s", ErrDeclaration, strings.TrimPrefix(err.Error(), ErrRuntime.Error()+": "))
	}
	if err != nil {
		return err
	}
	if !r.declared {
		return fmt.Errorf("%w: %s: no rule{ name = ..., ... } declaration", ErrDeclaration, r.file)
	}
	// Raw lookups: a metatable on _G (strict-mode globals, or a hostile
	// __index that never returns) must not run code outside a protected,
	// budgeted call.
	handler := func(name string) (*lua.LFunction, error) {
		switch v := L.G.Global.RawGetString(name).(type) {
		case *lua.LNilType:
			return nil, nil
		case *lua.LFunction:
			return v, nil
		default:
			return nil, fmt.Errorf("%w: %s: %s is a %s, want a function", ErrDeclaration, r.file, name, v.Type())
		}
	}
	if r.onMessage, err = handler("on_message"); err != nil {
		return err
	}
	if r.onTick, err = handler("on_tick"); err != nil {
		return err
	}
	if r.onDump, err = handler("on_dump_finished"); err != nil {
		return err
	}
	d := &r.decl
	switch {
	case r.onMessage == nil && r.onTick == nil && r.onDump == nil:
		return fmt.Errorf("%w: %s: defines none of on_message, on_tick, on_dump_finished", ErrDeclaration, r.file)
	case r.onMessage != nil && len(d.Topics) == 0:
		return fmt.Errorf("%w: %s: on_message without topics in rule{}", ErrDeclaration, r.file)
	case r.onTick == nil && d.Tick > 0:
		return fmt.Errorf("%w: %s: tick declared but no on_tick", ErrDeclaration, r.file)
	case r.onTick != nil && d.Tick == 0:
		d.Tick = time.Second
	}
	if len(r.paramSet) > 0 {
		var unknown []string
		for k := range r.opts.Params {
			if !r.paramSet[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			declared := make([]string, 0, len(r.paramSet))
			for k := range r.paramSet {
				declared = append(declared, k)
			}
			sort.Strings(declared)
			return &UnknownParamsError{File: r.file, Names: unknown, Declared: declared}
		}
	}
	for k, v := range r.opts.Params {
		d.Params[k] = v
	}
	if r.opts.Time != "" {
		d.Time = r.opts.Time
	}
	if r.opts.Name != "" {
		d.Name = r.opts.Name
	}
	switch d.Time {
	case "":
		d.Time = TimeProducer
	case TimeProducer, TimeCapture:
	case TimeEvent:
		if d.EventTime == "" {
			return fmt.Errorf("%w: %s: time %q needs the field: rule{ event_time = \"stamp\", event_time_unit = \"ns\" }", ErrDeclaration, r.file, d.Time)
		}
	default:
		return fmt.Errorf("%w: %s: time %q: want %q, %q or %q", ErrDeclaration, r.file, d.Time, TimeProducer, TimeCapture, TimeEvent)
	}
	if d.EventTime != "" || d.EventTimeUnit != "" {
		if err := schema.CheckEventTimeUnit(d.EventTimeUnit); err != nil {
			return fmt.Errorf("%w: %s: event_time_unit: %v", ErrDeclaration, r.file, err)
		}
	}
	if d.MaxPerMinute > 0 {
		r.window = make([]int64, 0, d.MaxPerMinute)
	}
	r.trigParams = boundParams(d.Params)
	return r.checkMemory()
}

// Decl returns the rule's declaration. Do not modify its slices or map.
func (r *Rule) Decl() Decl { return r.decl }

// Name returns the declared name.
func (r *Rule) Name() string { return r.decl.Name }

// File returns the path or chunk name the rule was loaded from.
func (r *Rule) File() string { return r.file }

// Matches reports whether the rule's on_message wants topic.
func (r *Rule) Matches(topic string) bool {
	if r.onMessage == nil {
		return false
	}
	if topic == r.lastTopic && r.match != nil {
		return r.lastMatch
	}
	if r.match == nil || len(r.match) > 4096 {
		r.match = make(map[string]bool)
	}
	ok, seen := r.match[topic]
	if !seen {
		ok = matchAny(r.decl.Topics, topic)
		r.match[topic] = ok
	}
	r.lastTopic, r.lastMatch = topic, ok
	return ok
}

// ReadsMessages reports whether the rule defines on_message: whether its
// topics are its input (a rule of on_tick alone sees only time).
func (r *Rule) ReadsMessages() bool { return r.onMessage != nil }

// Disabled reports whether the rule has been disabled by an error.
func (r *Rule) Disabled() bool { return r.dead }

// msgTime is m's time in the rule's time domain.
func (r *Rule) msgTime(m *Message) int64 {
	switch {
	case r.decl.Time == TimeEvent:
		if ns, ok := r.eventTime(m); ok {
			return ns
		}
		if m.GenTS != 0 {
			return m.GenTS
		}
	case r.decl.Time == TimeProducer && m.GenTS != 0:
		return m.GenTS
	}
	return m.TS
}

// Feed delivers the ticks due up to m's time, then m to on_message when
// the topic matches. m and m.Data are not kept.
func (r *Rule) Feed(m *Message) {
	if r.dead {
		return
	}
	t := r.msgTime(m)
	if r.torn {
		r.skipTorn()
		return
	}
	r.capOff = m.TS - t
	r.advance(t)
	if r.dead || !r.Matches(m.Topic) {
		return
	}
	r.cur, r.now = m, t
	r.storeFields(m)
	if r.torn {
		r.cur = nil
		r.skipTorn()
		return
	}
	err := r.call(r.onMessage, r.budget.Instructions, r.view)
	r.cur = nil
	if r.torn && !errors.Is(err, ErrBudget) {
		// the callback stopped at its read of the overwritten payload
		r.skipTorn()
		return
	}
	r.torn = false
	r.st.messages.Add(1)
	if err != nil {
		r.fail(err)
	}
}

// skipTorn counts a message whose payload the ring overwrote before the
// rule read it as skipped, as a message overwritten before the rule's
// reader reached it is.
func (r *Rule) skipTorn() {
	r.torn = false
	r.st.skipped.Add(1)
}

// Tick delivers the ticks due up to captureNs, for when no message
// arrives to carry time forward. captureNs is capture time (the
// recorder's clock, or the last capture time replayed); a TimeProducer
// rule maps it to its own time through its latest message.
func (r *Rule) Tick(captureNs int64) {
	if !r.dead {
		r.advance(captureNs - r.capOff)
	}
}

// DumpFinished calls on_dump_finished(d) with a table {path, reason,
// bytes, messages, error}.
func (r *Rule) DumpFinished(d DumpResult) {
	if r.dead || r.onDump == nil {
		return
	}
	if d.TimeNs != 0 {
		r.now = d.TimeNs - r.capOff
	}
	t := r.L.NewTable()
	t.RawSetString("path", lua.LString(d.Path))
	t.RawSetString("reason", lua.LString(d.Reason))
	t.RawSetString("bytes", lua.LNumber(d.Bytes))
	t.RawSetString("messages", lua.LNumber(d.Messages))
	if d.Status != "" {
		t.RawSetString("status", lua.LString(d.Status))
	}
	if d.Err != nil {
		t.RawSetString("error", lua.LString(d.Err.Error()))
	}
	if err := r.call(r.onDump, r.budget.Instructions, t); err != nil {
		r.fail(err)
	}
}

// advance fires on_tick for every tick boundary up to t.
func (r *Rule) advance(t int64) {
	if r.onTick == nil {
		return
	}
	tick := int64(r.decl.Tick)
	if r.nextTick == 0 {
		r.nextTick = (t/tick + 1) * tick
		return
	}
	if due := (t-r.nextTick)/tick + 1; due > MaxCatchUpTicks {
		skip := due - MaxCatchUpTicks
		r.nextTick += skip * tick
		r.st.ticksSkipped.Add(uint64(skip))
	}
	for r.nextTick <= t && !r.dead {
		r.now = r.nextTick
		r.nextTick += tick
		err := r.call(r.onTick, r.budget.Instructions, r.nums.box(float64(r.now)))
		r.st.ticks.Add(1)
		if err != nil {
			r.fail(err)
		}
	}
}

// call runs fn(arg) under a budget of n instructions.
func (r *Rule) call(fn *lua.LFunction, n int64, arg lua.LValue) error {
	m, L := r.meter, r.L
	m.start(n)
	L.Push(fn)
	nargs := 0
	if arg != nil {
		L.Push(arg)
		nargs = 1
	}
	r.calls++
	m.st, m.seq = r.st, r.calls<<1|1
	r.st.callSeq.Store(m.seq)
	err := L.PCall(nargs, 0, nil)
	r.st.callSeq.Store(r.calls << 1)
	spent := m.spent(n)
	m.used += spent
	r.st.instrs.Add(uint64(spent))
	switch {
	case m.tripped != "" && err != nil:
		return fmt.Errorf("%w: %s", ErrBudget, luaMessage(err))
	case m.tripped != "":
		return fmt.Errorf("%w: %s: %s (the script caught the error)", ErrBudget, r.file, m.tripped)
	case err != nil:
		return fmt.Errorf("%w: %s", ErrRuntime, r.errorText(err))
	}
	if m.used >= walkEvery || m.strBytes >= r.budget.Memory/4 {
		return r.checkMemory()
	}
	return nil
}

// checkMemory walks the rule's state and fails when it is over budget.
func (r *Rule) checkMemory() error {
	r.meter.used, r.meter.strBytes = 0, 0
	if n := stateBytes(r.L, r.budget.Memory); n > r.budget.Memory {
		return fmt.Errorf("%w: %s: rule state is over %d bytes (limit %d)", ErrBudget, r.file, n, r.budget.Memory)
	}
	return nil
}

// abort makes the callback running now (and every later one) stop within
// 256 instructions. Safe from any goroutine. A callback inside a Go
// library function stops when that function returns.
func (r *Rule) abort() { r.meter.abort.Store(true) }

// fail disables the rule.
func (r *Rule) fail(err error) {
	if r.meter.abort.Load() {
		r.dead = true // stopping: not a fault of the rule
		return
	}
	r.dead = true
	r.st.errors.Add(1)
	r.st.mu.Lock()
	r.st.disabled, r.st.why = true, err.Error()
	r.st.mu.Unlock()
	r.logger.Error("rule disabled", "rule", r.decl.Name, "file", r.file, "err", err)
}

// Status returns a snapshot of the rule's counters. Safe for concurrent
// use.
func (r *Rule) Status() RuleStatus {
	s := r.st
	out := RuleStatus{
		Name: r.decl.Name, File: r.file, Topics: r.decl.Topics,
		Messages: s.messages.Load(), Ticks: s.ticks.Load(), TicksSkipped: s.ticksSkipped.Load(),
		Errors: s.errors.Load(), TriggersFired: s.fired.Load(), TriggersSuppressed: s.suppressed.Load(),
		LogsDropped: s.logsDropped.Load(), Instructions: s.instrs.Load(),
		Skipped: s.skipped.Load(), LagNs: s.lag.Load(), Reloads: s.reloads.Load(),
	}
	s.mu.Lock()
	if seq := s.callSeq.Load(); seq&1 != 0 {
		now := int64(time.Since(monoStart))
		if seq != s.seenSeq {
			s.seenSeq, s.seenAt = seq, now
		}
		began := s.seenAt
		if s.stampSeq.Load() == seq {
			began = min(began, s.stamp.Load())
		}
		out.CallNs = max(now-began, 0)
		out.Stuck = out.CallNs > int64(StuckAfter)
	}
	out.Disabled, out.Why, out.ReloadError = s.disabled, s.why, s.reloadErr
	s.mu.Unlock()
	return out
}

// Close releases the Lua state. It is idempotent.
func (r *Rule) Close() {
	if r.L != nil && !r.closed {
		r.closed = true
		r.dead = true
		r.L.Close()
	}
}

// admit applies cooldown and max_per_minute at message time now.
func (r *Rule) admit(now int64) bool {
	d := &r.decl
	if r.fired && d.Cooldown > 0 && now < r.lastFire+int64(d.Cooldown) {
		return false
	}
	if d.MaxPerMinute > 0 {
		if len(r.window) == d.MaxPerMinute {
			if oldest := r.window[r.wpos]; now-oldest < int64(time.Minute) {
				return false
			}
			r.window[r.wpos] = now
			r.wpos = (r.wpos + 1) % d.MaxPerMinute
		} else {
			r.window = append(r.window, now)
		}
	}
	r.fired, r.lastFire = true, now
	return true
}

// allowLog is a token bucket in message time.
func (r *Rule) allowLog() bool {
	rate := float64(r.budget.LogPerSecond)
	if r.now > r.logAt {
		r.logTokens = min(rate, r.logTokens+float64(r.now-r.logAt)/1e9*rate)
		r.logAt = r.now
	}
	if r.logTokens >= 1 {
		r.logTokens--
		return true
	}
	return false
}

// errorText is luaMessage, with the position error() was called at and the
// value's type when the rule raised something other than a string.
func (r *Rule) errorText(err error) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		if _, ok := ae.Object.(lua.LString); !ok {
			where := r.meter.errWhere
			if where == "" {
				where = r.file + ":"
			}
			return fmt.Sprintf("%s error raised with a %s value, not a message", where, ae.Object.Type())
		}
	}
	return luaMessage(err)
}

// luaMessage is the Lua error text ("file:line: message") without the
// stack trace.
func luaMessage(err error) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		if ae.Object != nil && ae.Object != lua.LNil {
			return ae.Object.String()
		}
		if ae.Cause != nil {
			return ae.Cause.Error()
		}
	}
	return err.Error()
}

// optDurationArg is durationArg for a window that may be left unset:
// the result points to the value.
func optDurationArg(v lua.LValue) (*time.Duration, error) {
	d, err := durationArg(v)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// durationArg converts a Lua duration: a string ("15s", "500ms") or a
// number of seconds.
func durationArg(v lua.LValue) (time.Duration, error) {
	switch x := v.(type) {
	case lua.LString:
		d, err := units.ParseDuration(string(x))
		if err == nil && d < 0 {
			err = fmt.Errorf("negative duration %q", string(x))
		}
		return d, err
	case lua.LNumber:
		if x < 0 || x > 1e9 || x != x {
			return 0, fmt.Errorf("duration %v seconds out of range", float64(x))
		}
		return time.Duration(float64(x) * 1e9), nil
	}
	return 0, fmt.Errorf("want a duration like \"15s\" or a number of seconds, got a %s", v.Type())
}

// globsArg converts a topic list: a string or an array of strings.
func globsArg(v lua.LValue) ([]string, error) {
	switch x := v.(type) {
	case lua.LString:
		return []string{string(x)}, nil
	case *lua.LTable:
		var out []string
		for i := 1; i <= x.Len(); i++ {
			s, ok := x.RawGetInt(i).(lua.LString)
			if !ok || s == "" {
				return nil, fmt.Errorf("topic %d is not a non-empty string", i)
			}
			out = append(out, string(s))
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a topic glob or a list of them, got a %s", v.Type())
}

func formatParam(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return strconv.FormatFloat(float64(n), 'g', -1, 64)
	}
	return v.String()
}
