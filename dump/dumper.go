package dump

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/units"
)

// Dumper is the dump pipeline of one Recorder: it accepts triggers, waits
// for their post windows, reads the selected windows out of the rings,
// merges them in time order, writes the file through a Writer (.tmp, fsync,
// rename, directory fsync), rotates old dumps and runs hooks.
//
// All methods are safe for concurrent use. Dumps are written one at a time
// by the Dumper's own goroutine.
type Dumper struct {
	rec *engine.Recorder
	cfg Config
	dir Dir

	mu       sync.Mutex
	running  bool
	stopped  bool
	pending  []*job
	byTrig   map[TriggerID]*job
	nextTrig uint64
	nextDump uint64
	recent   []int64 // clock times of dumps rules started, for the rate limit
	// recentManual: the same for operators' dumps (their own limit)
	recentManual []int64
	leftover     []string // leftovers kept (NAME.interrupted)
	leftRemoved  []string // empty leftovers removed

	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	hookq    chan Result
	hookDone chan struct{}
	release  func() error // Recorder.Retain's done, while started
	deadline atomic.Int64 // unix ns (real time) after which a dump is abandoned; 0 = none

	writing     atomic.Bool
	written     atomic.Uint64
	failed      atomic.Uint64
	coalesced   atomic.Uint64
	rateLimited atomic.Uint64
	// manual triggers refused by their own rate limit; triggers refused
	// because they selected nothing, by origin
	rateLimitedManual          atomic.Uint64
	refusedManual, refusedRule atomic.Uint64
	refusedDisk                atomic.Uint64
	hookDropped                atomic.Uint64
	rotated                    atomic.Uint64
	rotatedFor                 [3]atomic.Uint64 // by reason: rotationReasons
	late                       atomic.Uint64
	rewritten                  atomic.Uint64
	lastErr                    atomic.Pointer[string]
	gid                        int // group of dump files, -1: the process's

	// chain: the dump directory's, when Config.Signer is set (evidence.go)
	chain      *evidence.Chain
	chainNotes []string
	chainErrs  atomic.Uint64
}

// New validates cfg, prepares the dump directory (created if missing,
// proven writable) and deals with the leftovers of an interrupted run
// (Dir.TidyLeftovers): empty ones removed (Status.LeftoverRemoved), the
// others renamed NAME.interrupted (Status.LeftoverTmp) for "edr-lite
// recover". Triggers are accepted after Start.
func New(rec *engine.Recorder, cfg Config) (*Dumper, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	gid, err := lookupGroup(cfg.Group)
	if err != nil {
		return nil, err
	}
	dir := OpenDir(cfg.Dir, cfg.Extension)
	dir.Mode, dir.Gid = dirMode(cfg.FileMode), gid
	if err := dir.Prepare(); err != nil {
		return nil, err
	}
	left, err := dir.TidyLeftovers()
	if err != nil {
		return nil, err
	}
	d := &Dumper{rec: rec, cfg: cfg, dir: dir, gid: gid,
		byTrig: make(map[TriggerID]*job), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), hookDone: make(chan struct{}),
		hookq: make(chan Result, cfg.HookQueue)}
	d.leftover, d.leftRemoved = left.Kept, left.Removed
	for _, err := range left.Errs {
		s := fmt.Sprintf("leftovers of an earlier run: %v", err)
		d.lastErr.Store(&s)
	}
	if cfg.Signer != nil {
		if err := d.openChain(left.Kept); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// job is one dump: accepted, waiting for its post window, then written.
type job struct {
	seq      uint64
	t0       int64
	reason   string
	from, to int64
	due      int64
	trigs    []TriggerID
	records  []dumpinfo.Trigger
	topics   map[ingest.TopicID]*window
	order    []ingest.TopicID
	writing  bool
	done     chan struct{}
	res      Result
}

// window is one topic's window in a job.
type window struct {
	engine.Window
	// The window's first seq, found by the dumper soon after the trigger
	// (anchorPending) while the window start is still held, so messages
	// overwritten before the dump reads them are counted. Dumper only
	// (under d.mu while the job is pending).
	anchorFrom int64 // the From anchored (or tried); valid when tried
	anchorSeq  uint64
	anchorOK   bool // anchorSeq is exact
	tried      bool
}

// add merges a trigger and its topic windows into the job (d.mu held). The
// job keeps the pins of windows of topics it did not have; the others are
// returned for the caller to unpin.
func (j *job) add(id TriggerID, rec dumpinfo.Trigger, sel []engine.Window, from, to, due int64) (unneeded []engine.Window) {
	j.trigs = append(j.trigs, id)
	j.records = append(j.records, rec)
	j.from, j.to, j.due = min(j.from, from), max(j.to, to), max(j.due, due)
	for _, w := range sel {
		if have := j.topics[w.Topic]; have != nil {
			have.From, have.To = min(have.From, w.From), max(have.To, w.To)
			unneeded = append(unneeded, w)
			continue
		}
		j.topics[w.Topic] = &window{Window: w}
		j.order = append(j.order, w.Topic)
	}
	return unneeded
}

// forget drops finished jobs from byTrig once it grows large (d.mu held).
func (d *Dumper) forget() {
	if len(d.byTrig) < 4096 {
		return
	}
	for id, j := range d.byTrig {
		select {
		case <-j.done:
			delete(d.byTrig, id)
		default:
		}
	}
}

// Start starts the dumper and hook goroutines; triggers are accepted from
// now on. The recorder's cache stays mapped until Stop returns.
func (d *Dumper) Start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running || d.stopped {
		return fmt.Errorf("dump: Start called twice")
	}
	release, err := d.rec.Retain()
	if err != nil {
		return err
	}
	d.release = release
	d.running = true
	go d.loop()
	go d.runHooks()
	return nil
}

// Stop stops accepting triggers and writes every pending dump now (with the
// part of its post window recorded so far), spending at most
// Config.StopTimeout; a dump still being written at the deadline is
// abandoned, its .tmp removed, and reported with ErrStopped. Hooks get the
// results queued before Stop returns. Stop is idempotent; call it before
// Recorder.Close.
func (d *Dumper) Stop() {
	d.mu.Lock()
	if !d.running {
		d.mu.Unlock()
		return
	}
	d.running = false
	d.stopped = true
	d.mu.Unlock()
	d.deadline.Store(time.Now().Add(d.cfg.StopTimeout).UnixNano())
	close(d.stop)
	<-d.done
	close(d.hookq)
	<-d.hookDone
	d.release()
}

// IsDumping reports whether a dump file is being written right now.
func (d *Dumper) IsDumping() bool { return d.writing.Load() }

// loop is the single goroutine that writes dumps, one at a time. It polls
// the recorder's clock every PollInterval only while dumps wait for their
// post window: an idle recorder does not wake (a trigger wakes it through
// d.wake).
func (d *Dumper) loop() {
	defer close(d.done)
	if !d.cfg.KeepPriority {
		// A thread of its own at a lower CPU and I/O priority, ended with
		// the goroutine (never unlocked): ingest goes first.
		runtime.LockOSThread()
		lowerPriority()
	}
	tick := time.NewTimer(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		stopping := false
		select {
		case <-d.stop:
			stopping = true
		case <-d.wake:
		case <-tick.C:
		}
		d.anchorPending()
		for {
			j := d.nextJob(stopping)
			if j == nil {
				break
			}
			d.runJob(j)
		}
		if stopping {
			return
		}
		d.mu.Lock()
		waiting := len(d.pending) > 0
		d.mu.Unlock()
		if waiting {
			tick.Reset(d.cfg.PollInterval)
		}
	}
}

// anchorPending finds the first seq of each pending dump's topic windows
// not anchored yet, while their start is still in the ring (a ring too small
// for its window overwrites it before the dump is written). The scans run
// without d.mu; a window whose start moved (merge) meanwhile is tried again.
func (d *Dumper) anchorPending() {
	type want struct {
		w    *window
		view engine.Window
	}
	var ws []want
	d.mu.Lock()
	for _, j := range d.pending {
		for _, id := range j.order {
			if w := j.topics[id]; !w.tried || w.anchorFrom != w.From {
				ws = append(ws, want{w, w.Window})
			}
		}
	}
	d.mu.Unlock()
	for i := range ws {
		x := &ws[i]
		seq, ok, found := engine.NewWindowCursor(&x.view).Anchor(false)
		if !found {
			continue // nothing at or after From yet: try again later
		}
		d.mu.Lock()
		if x.w.From == x.view.From {
			x.w.anchorFrom, x.w.anchorSeq, x.w.anchorOK, x.w.tried = x.view.From, seq, ok, true
		}
		d.mu.Unlock()
	}
}

// nextJob takes the earliest due job (any job when stopping).
func (d *Dumper) nextJob(all bool) *job {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.rec.Now()
	best := -1
	for i, j := range d.pending {
		if (all || j.due <= now) && (best < 0 || j.due < d.pending[best].due) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	j := d.pending[best]
	d.pending = append(d.pending[:best], d.pending[best+1:]...)
	j.writing = true
	return j
}

// runJob writes one dump and reports it.
func (d *Dumper) runJob(j *job) {
	d.writing.Store(true)
	d.rec.SetBusy(true)
	res := d.write(j)
	d.rec.SetBusy(false)
	d.writing.Store(false)
	res.Triggers = j.trigs
	res.Records = j.records
	for _, rec := range j.records {
		res.Reasons = append(res.Reasons, rec.Reason)
	}
	switch {
	case res.Err == nil:
		res.Status = StatusWritten
	case errors.Is(res.Err, ErrStopped):
		res.Status = StatusAbandoned
	case errors.Is(res.Err, ErrDiskLow):
		res.Status = StatusRefused
	default:
		res.Status = StatusFailed
	}
	if res.Err != nil {
		d.failed.Add(1)
		s := res.Err.Error()
		d.lastErr.Store(&s)
	} else {
		d.written.Add(1)
		d.late.Add(res.Late)
		d.rewritten.Add(res.Rewritten)
		d.rotate(res.Path)
	}
	j.res = res
	for _, id := range j.order {
		d.rec.Unpin(j.topics[id].Window)
	}
	close(j.done)
	select { // failures too: hooks hear every outcome (Result.Status)
	case d.hookq <- res:
	default:
		d.hookDropped.Add(1)
	}
}

// rotate applies the rotation bounds after a dump, sparing keep (the dump
// just written) and the dumps cfg.Keeper keeps.
func (d *Dumper) rotate(keep string) {
	del, _, _ := d.dir.RotateKeeping(d.cfg.MaxFiles, d.cfg.MaxTotalBytes, keep, d.cfg.Keeper)
	d.countRotated(del)
}

// rotationReasons index Dumper.rotatedFor.
var rotationReasons = [...]string{ReasonMaxFiles, ReasonMaxTotalBytes, ReasonMinFreeDisk}

func (d *Dumper) countRotated(del []Eviction) {
	for _, e := range del {
		d.rotated.Add(1)
		for i, r := range rotationReasons {
			if e.Reason == r {
				d.rotatedFor[i].Add(1)
			}
		}
	}
}

// write writes j's file: .tmp, synced, renamed, directory synced.
func (d *Dumper) write(j *job) Result {
	res := Result{StartNs: j.from, EndNs: j.to}
	dc := &d.cfg
	var estimate int64 = 64 << 10 // header, index, dump info
	for _, id := range j.order {
		estimate += estimateSize(&j.topics[id].Window)
	}
	if dc.MinFreeDisk > 0 {
		free, err := freeDisk(dc.Dir)
		if err != nil {
			res.Err = err
			return res
		}
		need := estimate + dc.MinFreeDisk
		if free < need && dc.Keeper != nil {
			// with an upload queue, recording wins: the oldest dumps go
			// (uploaded ones first), one at a time until the dump fits,
			// or none when deleting them all would not make it fit
			del, err := d.dir.MakeRoom(free, need, "", dc.Keeper)
			d.countRotated(del)
			if err != nil && len(del) == 0 {
				d.refusedDisk.Add(1)
				res.Err = fmt.Errorf("%w: dump %d %q refused: it needs up to %s and min_free_disk keeps %s; %w",
					ErrDiskLow, j.seq, j.reason, units.FormatSize(estimate), units.FormatSize(dc.MinFreeDisk), err)
				return res
			}
			if f, err := freeDisk(dc.Dir); err == nil {
				free = f
			}
			if free < need && len(del) > 0 {
				d.refusedDisk.Add(1)
				res.Err = fmt.Errorf("%w: dump %d %q refused: it needs up to %s and min_free_disk keeps %s; %s free on the file system of %s after deleting %d dumps (a deleted dump still open in another process holds its room until closed)",
					ErrDiskLow, j.seq, j.reason, units.FormatSize(estimate), units.FormatSize(dc.MinFreeDisk), units.FormatSize(free), dc.Dir, len(del))
				return res
			}
		}
		if free < need {
			d.refusedDisk.Add(1)
			res.Err = fmt.Errorf("%w: dump %d %q refused: it needs up to %s and min_free_disk keeps %s; %s free on the file system of %s (no dump deleted)",
				ErrDiskLow, j.seq, j.reason, units.FormatSize(estimate), units.FormatSize(dc.MinFreeDisk), units.FormatSize(free), dc.Dir)
			return res
		}
	}
	final := filepath.Join(dc.Dir, Name(j.t0, j.reason, j.seq, dc.Extension))
	tmp := final + TmpExt
	sealer := d.sealerFor()
	if sealer != nil {
		defer sealer.Stop() // its hashing goroutine, whatever became of the dump
	}
	w, err := dc.NewWriter(tmp, WriterOptions{Compression: dc.Compression, FrameSize: dc.FrameSize, FrameSpan: dc.FrameSpan,
		WriterName: dc.WriterName, CreatedNs: d.rec.Now(), SizeHint: estimate, Seal: sealer})
	if err == nil {
		if err = d.protect(tmp); err != nil {
			w.Abort()
		}
	}
	if err != nil {
		os.Remove(tmp)
		res.Err = err
		return res
	}
	out := w
	var chain *stageChain
	if len(dc.Transforms) > 0 {
		chain = newStageChain(w, dc.Transforms)
		out = chain
	}
	var ro *reorderStage
	if dc.ReorderWindow > 0 {
		ro = newReorderStage(out, int64(dc.ReorderWindow), dc.ReorderMaxMessages)
		out = ro
	}
	info, err := d.copyWindows(j, out, &res)
	if err == nil && ro != nil {
		err = ro.flush()
	}
	if err == nil && chain != nil {
		if err = chain.flush(); err == nil {
			chain.account(&info)
			for _, a := range info.Topics {
				res.Late += a.Late
			}
		}
	}
	if rw, ok := w.(rewriter); ok {
		res.Rewritten = rw.rewritten()
	}
	if err == nil {
		err = w.SetInfo(info)
	}
	if err == nil {
		err = w.Close()
	} else {
		err = errors.Join(err, w.Abort())
	}
	if err == nil {
		d.sealed(sealer, tmp, final, &res) // in the chain's ledger before it is in the directory
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(dc.Dir)
	}
	if err != nil {
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		res.Err = fmt.Errorf("dump %d %q: %w", j.seq, j.reason, err)
		return res
	}
	if st, err := os.Stat(final); err == nil {
		res.Bytes = st.Size()
	}
	res.Path = final
	return res
}
