package step

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/durable"
	"github.com/edr-lite/edr-lite/pack"
)

// Labels of a dump written by a Recorder (its dump information's labels).
const (
	// LabelLoops is the loops recorded, as a JSON array of LoopAccount.
	LabelLoops = "edr.step.loops"
	// LabelInputs and LabelOutputs list the loops' input and output
	// topics, comma-separated: the outputs are what "edr-lite replay
	// --expect" names.
	LabelInputs  = "edr.step.inputs"
	LabelOutputs = "edr.step.outputs"
)

// Defaults of RecorderOptions.
const (
	DefaultWriter    = "edr-lite step"
	DefaultBatchSize = 256 << 10
	DefaultBatches   = 4
)

// RecorderOptions configure a Recorder. The zero value is valid.
type RecorderOptions struct {
	// Writer names the program in the dump ("" is DefaultWriter).
	Writer string
	// Labels are added to the dump information's labels.
	Labels map[string]string
	// Now reads the clock, ns since the UNIX epoch (nil: the wall clock).
	Now func() int64
	// BatchSize is how many bytes of messages a tick appends to before
	// they go to the writer goroutine (0: DefaultBatchSize); Batches how
	// many such batches exist (0: DefaultBatches, at least 2). A tick that
	// finds every batch waiting for the disk waits too, counted in
	// RecorderStats.Stalls: memory is bounded by Batches × BatchSize (plus
	// any message larger than a batch).
	BatchSize, Batches int
}

// LoopAccount is what a Recorder recorded of one loop (LabelLoops).
type LoopAccount struct {
	Name   string `json:"name"`
	Input  string `json:"input"`
	Output string `json:"output"`
	// Ticks counts the inputs recorded, Outputs the outputs.
	Ticks   uint64 `json:"ticks"`
	Outputs uint64 `json:"outputs"`
	// StepErrors counts the ticks whose step returned an error: their
	// input is recorded, no output.
	StepErrors uint64 `json:"step_errors,omitempty"`
	// Unrecorded counts the calls not recorded (their input could not be
	// encoded, or the recorder was closed) and the outputs that could not
	// be encoded: a replay of a stateful step may then diverge.
	Unrecorded uint64 `json:"unrecorded,omitempty"`
}

// RecorderStats are a Recorder's counters.
type RecorderStats struct {
	Loops []LoopAccount
	// Bytes is the payload bytes recorded.
	Bytes uint64
	// Stalls counts the ticks that waited for a free batch (the disk was
	// slower than the steps), StallTime how long in all.
	Stalls    uint64
	StallTime time.Duration
}

// Recorder writes the ticks of recorded step loops to one pack dump.
// Create one, wrap each loop's step with Record, run, Close.
//
// A Recorder is safe for concurrent use: loops run on their own
// goroutines, and a loop's wrapped step may be called from several.
type Recorder struct {
	path, tmp string
	opts      RecorderOptions
	now       func() int64
	batchSize int

	mu       sync.Mutex
	closed   bool
	batch    []byte
	loops    []*recLoop
	last     int64 // the last capture time given: strictly increasing
	bytes    uint64
	stalls   uint64
	stallNs  int64
	firstErr error

	// tmu guards topics: the writer goroutine reads them under it alone,
	// never under mu, which a tick holds while it waits for a free batch
	tmu    sync.Mutex
	topics []*recTopic

	full chan []byte
	free chan []byte
	done chan error

	w      *pack.Writer // the writer goroutine's until done
	finish func() error // after w.Close: fsync and close the file (not Linux)
	result error        // Close's result, for a second Close
}

type recTopic struct {
	name, channel string
	typ           ingest.Type
}

type recLoop struct {
	def     loopDef
	in, out uint16 // topic indexes
	acct    LoopAccount
}

// Batch records: a topic declaration, or a message.
const (
	recDecl = 1 + iota
	recMsg
)

const msgHead = 1 + 2 + 8 + 8 + 4 // kind, topic, gen, capture, length

// Create starts a recording to path (a pack dump, written as path.tmp,
// made durable and renamed by Close, so a name without .tmp is always
// complete).
func Create(path string, opts RecorderOptions) (*Recorder, error) {
	if opts.Writer == "" {
		opts.Writer = DefaultWriter
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Batches <= 0 {
		opts.Batches = DefaultBatches
	}
	opts.Batches = max(opts.Batches, 2)
	r := &Recorder{path: path, tmp: path + ".tmp", opts: opts, now: opts.Now, batchSize: opts.BatchSize}
	if r.now == nil {
		r.now = func() int64 { return time.Now().UnixNano() }
	}
	wo := pack.WriterOptions{Writer: opts.Writer, CreatedNs: time.Now().UnixNano()}
	w, err := pack.Create(r.tmp, wo)
	if errors.Is(err, pack.ErrNotSupported) {
		var f *os.File
		if f, err = os.Create(r.tmp); err == nil {
			if w, err = pack.NewStreamWriter(f, wo); err != nil {
				f.Close()
			} else {
				r.finish = func() error {
					err := f.Sync()
					if cerr := f.Close(); err == nil {
						err = cerr
					}
					return err
				}
			}
		}
	}
	if err != nil {
		os.Remove(r.tmp)
		return nil, fmt.Errorf("step: recording %s: %w", path, err)
	}
	r.w = w
	c := opts.BatchSize + opts.BatchSize/4
	r.batch = make([]byte, 0, c)
	r.full = make(chan []byte, opts.Batches)
	r.free = make(chan []byte, opts.Batches)
	for range opts.Batches - 1 {
		r.free <- make([]byte, 0, c)
	}
	r.done = make(chan error, 1)
	go r.writeLoop()
	return r, nil
}

// Record wraps fn so that every call records a tick: its input (with the
// tick's time, WithTime or the recorder's clock) before fn runs, its
// output after. The wrapped function has fn's signature and returns what
// fn returns; fn runs whether or not the tick could be recorded (a
// recording problem never fails the node: Close reports it). The loop's
// topics must not be another loop's.
//
// A tick costs a lock, a clock read and the encoding of the input and the
// output into the recorder's batch (docs/performance.md); a ctx without
// WithTime costs a context.WithValue besides.
func Record[In, Out any](r *Recorder, l Loop[In, Out], fn Func[In, Out]) (Func[In, Out], error) {
	d, err := l.def()
	if err != nil {
		return nil, err
	}
	lp, err := r.addLoop(d)
	if err != nil {
		return nil, err
	}
	inC, outC := l.In, l.Out
	return func(ctx context.Context, in In) (Out, error) {
		t, given := Time(ctx)
		r.mu.Lock()
		recorded := false
		if r.closed {
			lp.acct.Unrecorded++
			if !given {
				t = r.now()
			}
		} else {
			stamp := r.stampLocked()
			if !given {
				t = stamp
			}
			pos := len(r.batch)
			b, err := inC.Append(appendHead(r.batch, recMsg, lp.in, t, stamp), in)
			if err != nil {
				r.batch = r.batch[:pos]
				r.failLocked(lp, fmt.Errorf("loop %s: input: %w", lp.def.name, err))
			} else {
				r.batch = endMsg(b, pos)
				r.bytes += uint64(len(b) - pos - msgHead)
				lp.acct.Ticks++
				recorded = true
				r.flushLocked()
			}
		}
		r.mu.Unlock()
		if !given {
			ctx = WithTime(ctx, t)
		}
		out, err := fn(ctx, in)
		if !recorded {
			return out, err
		}
		r.mu.Lock()
		switch {
		case err != nil:
			lp.acct.StepErrors++
		case r.closed:
			lp.acct.Unrecorded++
		default:
			stamp := r.stampLocked()
			pos := len(r.batch)
			b, eerr := outC.Append(appendHead(r.batch, recMsg, lp.out, t, stamp), out)
			if eerr != nil {
				r.batch = r.batch[:pos]
				r.failLocked(lp, fmt.Errorf("loop %s: output: %w", lp.def.name, eerr))
			} else {
				r.batch = endMsg(b, pos)
				r.bytes += uint64(len(b) - pos - msgHead)
				lp.acct.Outputs++
				r.flushLocked()
			}
		}
		r.mu.Unlock()
		return out, err
	}, nil
}

func appendHead(b []byte, kind byte, topic uint16, gen, capture int64) []byte {
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint16(b, topic)
	b = binary.LittleEndian.AppendUint64(b, uint64(gen))
	b = binary.LittleEndian.AppendUint64(b, uint64(capture))
	return binary.LittleEndian.AppendUint32(b, 0)
}

// endMsg writes the length of the message whose head starts at pos.
func endMsg(b []byte, pos int) []byte {
	binary.LittleEndian.PutUint32(b[pos+msgHead-4:], uint32(len(b)-pos-msgHead))
	return b
}

func (r *Recorder) failLocked(lp *recLoop, err error) {
	lp.acct.Unrecorded++
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// stampLocked returns the capture time of the next message: the clock,
// made strictly increasing over the whole recording, so that the order of
// the messages in time is the order they were recorded in (the global
// sequence of the ticks) for every tool that orders by time.
func (r *Recorder) stampLocked() int64 {
	t := r.now()
	if t <= r.last {
		t = r.last + 1
	}
	r.last = t
	return t
}

// flushLocked hands a full batch to the writer goroutine.
func (r *Recorder) flushLocked() {
	if len(r.batch) < r.batchSize {
		return
	}
	var nb []byte
	select {
	case nb = <-r.free:
	default:
		t0 := time.Now()
		nb = <-r.free
		r.stalls++
		r.stallNs += int64(time.Since(t0))
	}
	r.full <- r.batch
	r.batch = nb
}

func (r *Recorder) addLoop(d loopDef) (*recLoop, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	defs := []loopDef{d}
	for _, lp := range r.loops {
		defs = append(defs, lp.def)
	}
	if err := checkTopics(defs); err != nil {
		return nil, err
	}
	if 2*len(r.loops)+2 > 1<<16 {
		return nil, fmt.Errorf("%w: more than %d topics", ErrOptions, 1<<16)
	}
	lp := &recLoop{def: d, acct: LoopAccount{Name: d.name, Input: d.input, Output: d.output}}
	for i, t := range []struct {
		topic string
		typ   ingest.Type
	}{{d.input, d.inType}, {d.output, d.outType}} {
		name, channel := pack.SplitTopic(t.topic)
		r.tmu.Lock()
		idx := uint16(len(r.topics))
		r.topics = append(r.topics, &recTopic{name: name, channel: channel, typ: t.typ})
		r.tmu.Unlock()
		r.batch = appendDecl(r.batch, idx)
		if i == 0 {
			lp.in = idx
		} else {
			lp.out = idx
		}
	}
	r.loops = append(r.loops, lp)
	return lp, nil
}

func appendDecl(b []byte, topic uint16) []byte {
	return binary.LittleEndian.AppendUint16(append(b, recDecl), topic)
}

// Stats returns the recorder's counters so far.
func (r *Recorder) Stats() RecorderStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statsLocked()
}

func (r *Recorder) statsLocked() RecorderStats {
	s := RecorderStats{Bytes: r.bytes, Stalls: r.stalls, StallTime: time.Duration(r.stallNs)}
	for _, lp := range r.loops {
		s.Loops = append(s.Loops, lp.acct)
	}
	return s
}

// writeLoop writes the batches it is handed, on its own goroutine, so a
// tick never waits for the disk (unless every batch does).
func (r *Recorder) writeLoop() {
	var (
		err    error
		topics []*recTopic
		accts  []dumpinfo.TopicAccount
	)
	for buf := range r.full {
		b := buf
		for err == nil && len(b) > 0 {
			switch b[0] {
			case recDecl:
				idx := binary.LittleEndian.Uint16(b[1:])
				b = b[3:]
				r.tmu.Lock()
				t := r.topics[idx]
				r.tmu.Unlock()
				topics = append(topics, t)
				accts = append(accts, dumpinfo.TopicAccount{Topic: pack.Topic(t.name, t.channel), Type: t.typ.Schema.Name})
				err = r.w.SetTopicType(t.name, t.channel, t.typ, 0)
			case recMsg:
				idx := binary.LittleEndian.Uint16(b[1:])
				gen := int64(binary.LittleEndian.Uint64(b[3:]))
				capture := int64(binary.LittleEndian.Uint64(b[11:]))
				n := int(binary.LittleEndian.Uint32(b[19:]))
				data := b[msgHead : msgHead+n]
				b = b[msgHead+n:]
				t, a := topics[idx], &accts[idx]
				if a.Messages == 0 {
					a.FirstNs = capture
				}
				a.Messages++
				a.Bytes += uint64(n)
				a.LastNs = capture
				err = r.w.Add(t.name, t.channel, nil, gen, capture, data)
			default:
				err = fmt.Errorf("BUG: step: batch record kind %d", b[0])
			}
		}
		r.free <- buf[:0]
	}
	if err == nil {
		err = r.w.SetDumpInfo(r.info(accts))
	}
	r.done <- err
}

// info is the dump information: the accounting of every topic and the
// loops in the labels.
func (r *Recorder) info(accts []dumpinfo.TopicAccount) dumpinfo.Info {
	r.mu.Lock()
	st := r.statsLocked()
	r.mu.Unlock()
	info := dumpinfo.Info{Writer: r.opts.Writer, CreatedNs: time.Now().UnixNano(), Labels: map[string]string{}, Topics: accts}
	if host, err := os.Hostname(); err == nil {
		info.Host = host
	}
	for _, a := range accts {
		if a.Messages == 0 {
			continue
		}
		if info.StartNs == 0 || a.FirstNs < info.StartNs {
			info.StartNs = a.FirstNs
		}
		info.EndNs = max(info.EndNs, a.LastNs)
	}
	for k, v := range r.opts.Labels {
		info.Labels[k] = v
	}
	var ins, outs []string
	for _, l := range st.Loops {
		ins, outs = append(ins, l.Input), append(outs, l.Output)
	}
	loops, _ := json.Marshal(st.Loops)
	info.Labels[LabelLoops] = string(loops)
	info.Labels[LabelInputs] = strings.Join(ins, ",")
	info.Labels[LabelOutputs] = strings.Join(outs, ",")
	return info
}

// Close writes what is pending, the dump information (every topic's
// account, the loops in the labels), makes the file durable and renames
// it to its name. Steps called after Close run unrecorded (counted). It
// returns an error when the file could not be written (none is left), or
// when some ticks could not be recorded (the file is written, its labels
// count them, the error gives the first cause). A second Close returns
// the first's result.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.result
	}
	r.closed = true
	r.full <- r.batch
	r.batch = nil
	close(r.full)
	r.mu.Unlock()
	err := <-r.done
	if err == nil {
		err = r.w.Close()
	} else {
		r.w.Close()
	}
	if r.finish != nil {
		if ferr := r.finish(); err == nil {
			err = ferr
		}
	}
	if err == nil {
		err = os.Rename(r.tmp, r.path)
	}
	if err == nil {
		err = durable.SyncDir(filepath.Dir(r.path))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		os.Remove(r.tmp)
		r.result = fmt.Errorf("step: recording %s: %w", r.path, err)
	case r.firstErr != nil:
		var n uint64
		for _, lp := range r.loops {
			n += lp.acct.Unrecorded
		}
		r.result = fmt.Errorf("%w: %s: %d calls or outputs not recorded; the first: %v", ErrCodec, r.path, n, r.firstErr)
	}
	return r.result
}

// Abort ends the recording without a file (the .tmp is removed).
func (r *Recorder) Abort() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.batch = nil
	close(r.full)
	r.mu.Unlock()
	<-r.done
	r.w.Close()
	if r.finish != nil {
		r.finish()
	}
	os.Remove(r.tmp)
	r.mu.Lock()
	r.result = fmt.Errorf("step: recording %s: aborted", r.path)
	r.mu.Unlock()
}
