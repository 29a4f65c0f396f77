package step

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/feedcheck"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// Mode is what a replay does with a loop (the reference's ReplayMode).
type Mode int

const (
	// Full runs the step on the recorded inputs and compares its outputs
	// with the recorded ones by the loop's Check: a regression test.
	Full Mode = iota
	// InputOnly runs the step on the recorded inputs and compares
	// nothing: a new version of a step on the same inputs (OnTick sees
	// its outputs).
	InputOnly
	// OutputOnly does not run the step: OnTick is handed the recorded
	// outputs at their ticks, to feed what consumes them.
	OutputOnly
)

var modeNames = [...]string{Full: "full", InputOnly: "input-only", OutputOnly: "output-only"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
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

// Timing is how a replay paces the ticks (the reference's ReplayTiming): a
// tick is due at start + (its time - the first tick's time) / Rate. Rate 0
// does not wait.
type Timing struct{ Rate float64 }

// The timings of the reference: as fast as possible, the recorded gaps,
// and Scaled(f) for f times as fast (2: twice as fast, 0.5: half speed).
var (
	AsFast   = Timing{}
	Realtime = Timing{Rate: 1}
)

// Scaled is the timing f times as fast as recorded.
func Scaled(f float64) Timing { return Timing{Rate: f} }

func (t Timing) String() string {
	switch t.Rate {
	case 0:
		return "as fast as possible"
	case 1:
		return "real time"
	}
	return "at " + strconv.FormatFloat(t.Rate, 'g', -1, 64) + "x"
}

// DriveOptions say what a replay does with one loop.
type DriveOptions struct {
	Mode Mode
	// Check is how Full compares the outputs (feedcheck: Exact, the
	// default; Tolerance, with bounds per field in Tolerances; None, the
	// count only). Its Decoder defaults to the output codec's type, so
	// differences are named by field; Topic, when set, must match the
	// output topic. Outputs are paired by tick (a recorded output with
	// what the step returned for the input it answers), so Align and
	// Window are not used and must be left zero.
	Check feedcheck.Check
}

// Tick is one tick of a replayed loop, as OnTick sees it.
type Tick[In, Out any] struct {
	// Seq is the tick's place in the global sequence (from 0: the order
	// of the replayed loops' inputs in the recording); Step the loop's
	// own count, from 1.
	Seq, Step int
	// TimeNs is the tick's time (what Time returns to the step).
	TimeNs int64
	In     In
	// Out is what the step returned (Full, InputOnly) or the recorded
	// output of the tick (OutputOnly); HasOut is false when there is none
	// (the step failed, or the recording holds no output for the tick).
	Out    Out
	HasOut bool
	Err    error
}

// Driver drives one loop's step from a recording; Replay takes several.
// Build it with Drive.
type Driver[In, Out any] struct {
	loop   Loop[In, Out]
	fn     Func[In, Out]
	opts   DriveOptions
	onTick func(Tick[In, Out])
}

// Drive returns the driver of loop l's step fn (the same Loop as it was
// recorded with: its topics and codecs).
func Drive[In, Out any](l Loop[In, Out], fn Func[In, Out], opts DriveOptions) *Driver[In, Out] {
	return &Driver[In, Out]{loop: l, fn: fn, opts: opts}
}

// OnTick sets a function called after each tick, on the loop's goroutine
// and during its turn (ticks of all loops see it one at a time, in their
// global sequence).
func (d *Driver[In, Out]) OnTick(f func(Tick[In, Out])) *Driver[In, Out] {
	d.onTick = f
	return d
}

// Replayer is a Driver of any types.
type Replayer interface {
	setup() (loopDef, DriveOptions, error)
	tick(ctx context.Context, lp *runLoop, tk *tick)
}

func (d *Driver[In, Out]) setup() (loopDef, DriveOptions, error) {
	def, err := d.loop.def()
	if err == nil && d.fn == nil && d.opts.Mode != OutputOnly {
		err = fmt.Errorf("%w: loop %s: no step function", ErrOptions, def.name)
	}
	return def, d.opts, err
}

// Options configure a Replay. The zero value replays as fast as possible.
type Options struct {
	Timing Timing
	// Now and Sleep are the clock of a timed replay (nil: the wall clock,
	// time.Sleep); tests give a virtual one.
	Now   func() int64
	Sleep func(ctx context.Context, d time.Duration) error
}

// MaxMismatches bounds the mismatches a Result lists; more are counted.
const MaxMismatches = 100000

// Result is what a Replay found.
type Result struct {
	Timing  string        `json:"timing"`
	Ticks   int           `json:"ticks"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Late is, in timed modes, how late the ticks were run after they
	// were due (p50, p99, max).
	Late  Latency      `json:"late"`
	Loops []LoopResult `json:"loops"`
	// Mismatches lists every difference (as "edr-lite replay --expect"
	// reports them: topic, step, field, expected, got), loop by loop.
	Mismatches          []feedcheck.Mismatch `json:"mismatches"`
	MismatchesNotListed int                  `json:"mismatches_not_listed,omitempty"`
	// Errors lists every error a step returned (or an input that could
	// not be decoded).
	Errors []StepError `json:"errors,omitempty"`
	// Notes say what the recording lacks or how it was read: topics
	// recorded without a schema, ticks the recorder could not record,
	// outputs before the first input.
	Notes []string `json:"notes,omitempty"`
}

// Latency is a distribution of delays.
type Latency struct {
	Samples int           `json:"samples"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Max     time.Duration `json:"max_ns"`
}

// LoopResult is one loop's account.
type LoopResult struct {
	Name   string `json:"name"`
	Input  string `json:"input"`
	Output string `json:"output"`
	Mode   string `json:"mode"`
	Check  string `json:"check"`
	Ticks  int    `json:"ticks"`
	// Recorded counts the recorded outputs attributed to a tick, Got the
	// outputs the step returned; Matched, Differing, Missing and Extra
	// what Full found of them.
	Recorded  int `json:"recorded"`
	Got       int `json:"got"`
	Matched   int `json:"matched"`
	Differing int `json:"differing"`
	Missing   int `json:"missing"`
	Extra     int `json:"extra"`
	// StepErrors counts the ticks whose step failed.
	StepErrors int `json:"step_errors"`
	// BeforeFirstInput counts recorded outputs older than the loop's
	// first input (not compared).
	BeforeFirstInput int `json:"before_first_input,omitempty"`
}

// StepError is a tick whose step returned an error.
type StepError struct {
	Loop   string `json:"loop"`
	Step   int    `json:"step"` // the tick's Seq + 1, as mismatches count
	TimeNs int64  `json:"time_ns"`
	Err    string `json:"error"`
	// Recorded says the recording holds an output for the tick: the step
	// did not fail when it was recorded.
	Recorded bool `json:"recorded"`
}

// OK reports whether the replay matched the recording: no mismatch, and
// no step failing where the recording has an output.
func (r *Result) OK() bool {
	if len(r.Mismatches) > 0 || r.MismatchesNotListed > 0 {
		return false
	}
	for _, e := range r.Errors {
		if e.Recorded {
			return false
		}
	}
	return true
}

// Err returns nil when OK, else an error holding the report's summary
// line and the first mismatches and errors (for t.Fatal).
func (r *Result) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.verdict())
	for i, m := range r.Mismatches {
		if i == 10 {
			fmt.Fprintf(&b, "\n  ... %d more", len(r.Mismatches)-i+r.MismatchesNotListed)
			break
		}
		b.WriteString("\n  " + m.String())
	}
	for i, e := range r.Errors {
		if i == 10 {
			fmt.Fprintf(&b, "\n  ... %d more errors", len(r.Errors)-i)
			break
		}
		b.WriteString("\n  " + e.String())
	}
	return fmt.Errorf("%w: %s", ErrMismatch, b.String())
}

func (e *StepError) String() string {
	return fmt.Sprintf("%s step %d: %s", e.Loop, e.Step, e.Err)
}

// runLoop is a loop's state during a replay.
type runLoop struct {
	r        Replayer
	def      loopDef
	opts     DriveOptions
	check    feedcheck.Check
	ticks    []*tick
	rec      []feedcheck.Recorded
	pub      []feedcheck.Published
	errs     []StepError
	res      LoopResult
	token    *turnToken
	inTypes  map[*ingest.Type]bool
	outTypes map[*ingest.Type]bool
}

// tick is one recorded input, with the recorded outputs that answer it.
type tick struct {
	seq, step int
	timeNs    int64 // message time: what pacing follows
	gen       int64 // producer time as recorded (0: unknown)
	tickNs    int64 // the tick's time: producer time, else message time
	data      []byte
	outs      []int // indexes into the loop's rec
}

// Replay drives the loops' steps from the recording in paths (pack or
// MCAP dumps, several merged in time order): each loop's inputs in the
// order of the recording, the loops interleaved by their global sequence
// (one tick at a time, each loop on its own goroutine, whatever the
// scheduling: run after run the same calls in the same order), paced by
// opts.Timing. Each tick's step is given Time(ctx) = the recorded time.
//
// A recorded output answers the input of its loop with the same producer
// time, else the last one before it (as the closed loop attributes them).
// In Full mode the outputs are compared by each loop's Check and every
// difference is in Result.Mismatches; the error is for a replay that could
// not be done (a topic the recording lacks, a type other than the codec's,
// bad options, ctx ending).
//
// Memory follows the recording: the inputs and outputs of the loops'
// topics are held until the end.
func Replay(ctx context.Context, paths []string, opts Options, drivers ...Replayer) (*Result, error) {
	if r := opts.Timing.Rate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return nil, fmt.Errorf("%w: rate %v", ErrOptions, r)
	}
	if len(drivers) == 0 {
		return nil, fmt.Errorf("%w: no loop to replay", ErrOptions)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no recording", ErrOptions)
	}
	loops := make([]*runLoop, len(drivers))
	var defs []loopDef
	for i, d := range drivers {
		def, o, err := d.setup()
		if err != nil {
			return nil, err
		}
		lp := &runLoop{r: d, def: def, opts: o, inTypes: map[*ingest.Type]bool{}, outTypes: map[*ingest.Type]bool{}}
		if err := lp.setCheck(); err != nil {
			return nil, err
		}
		lp.res = LoopResult{Name: def.name, Input: def.input, Output: def.output, Mode: o.Mode.String(), Check: "-"}
		if o.Mode == Full {
			lp.res.Check = lp.check.Mode.String()
		}
		loops[i], defs = lp, append(defs, def)
	}
	if err := checkTopics(defs); err != nil {
		return nil, err
	}
	srcs, err := dumpfile.OpenAll(paths)
	if err != nil {
		return nil, err
	}
	defer dumpfile.CloseAll(srcs)
	res := &Result{Timing: opts.Timing.String(), Mismatches: []feedcheck.Mismatch{}}
	if err := checkHeld(srcs, loops); err != nil {
		return nil, err
	}
	owner, err := readRecording(srcs, loops, res)
	if err != nil {
		return nil, err
	}
	res.Ticks = len(owner)
	if err := run(ctx, opts, loops, owner, res); err != nil {
		return nil, err
	}
	compare(loops, res)
	for _, lp := range loops {
		res.Loops = append(res.Loops, lp.res)
	}
	return res, nil
}

// setCheck resolves the loop's check: its decoder from the output codec,
// pairing by tick.
func (lp *runLoop) setCheck() error {
	o := &lp.opts
	if o.Mode < Full || o.Mode > OutputOnly {
		return fmt.Errorf("%w: loop %s: mode %d", ErrOptions, lp.def.name, o.Mode)
	}
	ch := o.Check
	if err := ch.Validate(); err != nil {
		return fmt.Errorf("%w: loop %s: %w", ErrOptions, lp.def.name, err)
	}
	if ch.Align != feedcheck.AlignSeq || ch.Window != 0 {
		return fmt.Errorf("%w: loop %s: outputs are paired by tick: leave Check.Align and Check.Window zero", ErrOptions, lp.def.name)
	}
	if ch.Topic != "" && !ch.Matches(lp.def.output) {
		return fmt.Errorf("%w: loop %s: check topic %q does not match the output %s", ErrOptions, lp.def.name, ch.Topic, lp.def.output)
	}
	ch.Topic, ch.Align = lp.def.output, feedcheck.AlignTime
	if ch.Decoder == nil {
		d, err := schema.NewDecoder(lp.def.outType)
		switch {
		case err == nil:
			ch.Decoder, ch.Schema = d, "the codec's type "+lp.def.outType.String()
		case ch.Mode == feedcheck.Tolerance && o.Mode == Full:
			return fmt.Errorf("%w: loop %s: a tolerance check needs a decoder, and the output's type %s gives none: %v",
				ErrOptions, lp.def.name, lp.def.outType, err)
		}
	}
	lp.check = ch
	return nil
}

// checkHeld refuses loops whose topics the recording does not hold.
func checkHeld(srcs []*dumpfile.Source, loops []*runLoop) error {
	held := map[string]bool{}
	var names []string
	for _, s := range srcs {
		for _, t := range s.Topics() {
			k := pack.Topic(t.Name, t.Channel)
			if !held[k] {
				held[k] = true
				names = append(names, t.String())
			}
		}
	}
	slices.Sort(names)
	key := func(topic string) string { return pack.Topic(pack.SplitTopic(topic)) }
	for _, lp := range loops {
		need := []string{lp.def.input}
		if lp.opts.Mode != InputOnly {
			need = append(need, lp.def.output)
		}
		for _, t := range need {
			if !held[key(t)] {
				return fmt.Errorf("%w: loop %s: no topic %s in %s (it holds %s)", ErrRecording, lp.def.name, t,
					strings.Join(srcPaths(srcs), ", "), strings.Join(names, ", "))
			}
		}
	}
	return nil
}

func srcPaths(srcs []*dumpfile.Source) []string {
	var ps []string
	for _, s := range srcs {
		ps = append(ps, s.Path)
	}
	return ps
}

// typeNote checks a recorded type against the codec's: the same, or
// recorded without an encoding (a note), or another (an error).
func typeNote(loop, topic string, rec *ingest.Type, codec ingest.Type) (string, error) {
	switch {
	case rec.Equal(codec):
		return "", nil
	case rec.MessageEncoding == "" || rec.MessageEncoding == ingest.EncodingRaw:
		return fmt.Sprintf("%s: recorded as %s, without a schema; read with the codec's type %s", topic, rec, codec), nil
	}
	other := ""
	if rec.String() == codec.String() {
		other = " (another schema)"
	}
	return "", fmt.Errorf("%w: loop %s: %s was recorded as %s%s, the loop's codec is %s", ErrRecording, loop, topic, rec, other, codec)
}

// readRecording reads the loops' inputs and outputs in time order: each
// input is a tick (its sequence number its place among all the loops'
// inputs), each output is attributed to its loop's tick. owner[seq] is the
// loop of tick seq.
func readRecording(srcs []*dumpfile.Source, loops []*runLoop, res *Result) ([]int, error) {
	type role struct {
		loop int
		out  bool
	}
	roles := map[string]role{}
	for i, lp := range loops {
		roles[pack.Topic(pack.SplitTopic(lp.def.input))] = role{i, false}
		roles[pack.Topic(pack.SplitTopic(lp.def.output))] = role{i, true}
	}
	type output struct {
		timeNs, gen int64
		data        []byte
	}
	outs := make([][]output, len(loops))
	var owner []int
	ms := dumpfile.NewMessages(srcs...)
	var key []byte
	for {
		ok, err := ms.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		m := ms.Message()
		key = append(append(append(key[:0], m.Name...), '#'), m.Channel...)
		ro, found := roles[string(key)]
		if !found {
			continue
		}
		lp := loops[ro.loop]
		if err := lp.noteType(ro.out, m.Type, res); err != nil {
			return nil, err
		}
		if ro.out {
			outs[ro.loop] = append(outs[ro.loop], output{m.TimeNs, m.GenNs, append([]byte{}, m.Data...)})
			continue
		}
		tk := &tick{seq: len(owner), step: len(lp.ticks) + 1, timeNs: m.TimeNs, gen: m.GenNs, tickNs: m.GenNs, data: append([]byte{}, m.Data...)}
		if tk.tickNs == 0 {
			tk.tickNs = m.TimeNs
		}
		lp.ticks = append(lp.ticks, tk)
		owner = append(owner, ro.loop)
	}
	// an output answers the input of its loop with its producer time (a
	// node stamps its answer with its input's time; a recorder may have
	// captured the answer first), else the last input at or before it
	for i, lp := range loops {
		genIdx := map[int64]*tick{}
		for _, tk := range lp.ticks {
			if tk.gen != 0 {
				genIdx[tk.gen] = tk
			}
		}
		for _, o := range outs[i] {
			tk := genIdx[o.gen]
			if o.gen == 0 || tk == nil {
				k := sort.Search(len(lp.ticks), func(j int) bool { return lp.ticks[j].timeNs > o.timeNs })
				if k == 0 {
					lp.res.BeforeFirstInput++
					continue
				}
				tk = lp.ticks[k-1]
			}
			tk.outs = append(tk.outs, len(lp.rec))
			lp.rec = append(lp.rec, feedcheck.Recorded{Seq: len(lp.rec), Step: tk.seq + 1, TimeNs: o.timeNs,
				GenNs: int64(tk.seq) + 1, Lat: -1, Data: o.data})
		}
	}
	for _, lp := range loops {
		lp.res.Ticks, lp.res.Recorded = len(lp.ticks), len(lp.rec)
		if lp.res.BeforeFirstInput > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("loop %s: %d recorded outputs older than its first input, not compared", lp.def.name, lp.res.BeforeFirstInput))
		}
		if len(lp.ticks) == 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("loop %s: no input on %s in the recording", lp.def.name, lp.def.input))
		}
	}
	noteAccounts(srcs, loops, res)
	return owner, nil
}

// noteType checks each type a loop's topic has in the recording, once.
func (lp *runLoop) noteType(out bool, t *ingest.Type, res *Result) error {
	seen, topic, codec := lp.inTypes, lp.def.input, lp.def.inType
	if out {
		seen, topic, codec = lp.outTypes, lp.def.output, lp.def.outType
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	note, err := typeNote(lp.def.name, topic, t, codec)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return err
}

// noteAccounts notes what the recorder said it could not record, and a
// recording that holds fewer ticks than were recorded (a cut).
func noteAccounts(srcs []*dumpfile.Source, loops []*runLoop, res *Result) {
	for _, s := range srcs {
		info, ok := s.DumpInfo()
		if !ok || info.Labels[LabelLoops] == "" {
			continue
		}
		var accts []LoopAccount
		if err := json.Unmarshal([]byte(info.Labels[LabelLoops]), &accts); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: label %s does not read: %v", s.Path, LabelLoops, err))
			continue
		}
		for _, a := range accts {
			for _, lp := range loops {
				if a.Input != lp.def.input {
					continue
				}
				if a.Unrecorded > 0 {
					res.Notes = append(res.Notes, fmt.Sprintf("loop %s: %s says %d calls or outputs were not recorded: a stateful step may diverge", lp.def.name, s.Path, a.Unrecorded))
				}
				if len(srcs) == 1 && uint64(len(lp.ticks)) != a.Ticks {
					res.Notes = append(res.Notes, fmt.Sprintf("loop %s: %s holds %d of the %d ticks recorded", lp.def.name, s.Path, len(lp.ticks), a.Ticks))
				}
			}
		}
	}
}

// run runs the ticks: one goroutine per loop, one tick at a time in the
// global sequence, paced by opts.Timing.
func run(ctx context.Context, opts Options, loops []*runLoop, owner []int, res *Result) error {
	now, sleep := opts.Now, opts.Sleep
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := newTurns(owner, len(loops))
	var (
		startWall, firstNs int64
		late               []time.Duration
		wg                 sync.WaitGroup
		errMu              sync.Mutex
		firstErr           error
	)
	begin := now()
	for i, lp := range loops {
		lp.token = t.tokens[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tk := range lp.ticks {
				if err := lp.token.wait(ctx, tk.seq); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					cancel()
					return
				}
				// the turn holder alone touches the timeline
				if opts.Timing.Rate > 0 {
					if tk.seq == 0 {
						startWall, firstNs = now(), tk.timeNs
					}
					due := startWall + int64(float64(tk.timeNs-firstNs)/opts.Timing.Rate)
					if d := due - now(); d > 0 {
						if err := sleep(ctx, time.Duration(d)); err != nil {
							errMu.Lock()
							if firstErr == nil {
								firstErr = err
							}
							errMu.Unlock()
							cancel()
							return
						}
					}
					late = append(late, time.Duration(max(0, now()-due)))
				}
				lp.r.tick(ctx, lp, tk)
				lp.token.done()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Duration(now() - begin)
	if firstErr != nil {
		return firstErr
	}
	res.Late = latencyOf(late)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func latencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Latency{Samples: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

// tick runs one tick of d's loop (during its turn).
func (d *Driver[In, Out]) tick(ctx context.Context, lp *runLoop, tk *tick) {
	t := Tick[In, Out]{Seq: tk.seq, Step: tk.step, TimeNs: tk.tickNs}
	fail := func(err error) {
		t.Err = err
		lp.errs = append(lp.errs, StepError{Loop: lp.def.name, Step: tk.seq + 1, TimeNs: tk.timeNs, Err: err.Error(), Recorded: len(tk.outs) > 0})
	}
	if err := d.loop.In.Decode(tk.data, &t.In); err != nil {
		fail(fmt.Errorf("decoding the input %s: %w", lp.def.input, err))
	} else if lp.opts.Mode == OutputOnly {
		if len(tk.outs) > 0 {
			if err := d.loop.Out.Decode(lp.rec[tk.outs[0]].Data, &t.Out); err != nil {
				fail(fmt.Errorf("decoding the recorded output %s: %w", lp.def.output, err))
			} else {
				t.HasOut = true
			}
		}
	} else if out, err := d.fn(WithTime(ctx, tk.tickNs), t.In); err != nil {
		fail(err)
	} else if data, err := d.loop.Out.Append(nil, out); err != nil {
		fail(fmt.Errorf("encoding the output %s: %w", lp.def.output, err))
	} else {
		t.Out, t.HasOut = out, true
		lp.pub = append(lp.pub, feedcheck.Published{Seq: len(lp.pub), Step: tk.seq + 1, TimeNs: tk.timeNs,
			GenNs: int64(tk.seq) + 1, Lat: -1, Data: data})
	}
	if d.onTick != nil {
		d.onTick(t)
	}
}

// compare compares each Full loop's outputs and fills the result.
func compare(loops []*runLoop, res *Result) {
	var firstNs int64
	for _, lp := range loops {
		if len(lp.ticks) > 0 && (firstNs == 0 || lp.ticks[0].timeNs < firstNs) {
			firstNs = lp.ticks[0].timeNs
		}
	}
	add := func(m feedcheck.Mismatch) {
		if len(res.Mismatches) < MaxMismatches {
			res.Mismatches = append(res.Mismatches, m)
		} else {
			res.MismatchesNotListed++
		}
	}
	for _, lp := range loops {
		tr := &lp.res
		tr.Got, tr.StepErrors = len(lp.pub), len(lp.errs)
		res.Errors = append(res.Errors, lp.errs...)
		if lp.opts.Mode != Full {
			continue
		}
		errAt := map[int]string{}
		for _, e := range lp.errs {
			errAt[e.Step] = e.Err
		}
		differing := map[int]bool{}
		c := feedcheck.Comparer{Check: &lp.check, Topic: lp.def.output, FirstNs: firstNs, Add: func(m feedcheck.Mismatch) {
			switch m.Kind {
			case "missing":
				tr.Missing++
				if e, ok := errAt[m.Step]; ok {
					m.Expected, m.Got = "an output", "error: "+e
				}
			case "extra":
				tr.Extra++
			default:
				differing[m.Seq] = true
			}
			add(m)
		}}
		c.Run(lp.rec, lp.pub)
		tr.Differing = len(differing)
		tr.Matched = c.Paired - tr.Differing
	}
}
