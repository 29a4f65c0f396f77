package engine

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

const (
	dumpExt = ".pack"
	tmpExt  = ".tmp"
)

// dumpState is the recorder's dump side: pending dumps, the dumper and hook
// goroutines, and their counters.
type dumpState struct {
	mu       sync.Mutex
	running  bool
	stopped  bool
	pending  []*dumpJob
	byTrig   map[TriggerID]*dumpJob
	nextTrig uint64
	nextDump uint64
	recent   []int64 // clock times of dumps started, for the rate limit
	leftover []string

	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	hookq    chan DumpResult
	hookDone chan struct{}
	deadline atomic.Int64 // unix ns (real time) after which a dump is abandoned; 0 = none

	writing     atomic.Bool
	written     atomic.Uint64
	failed      atomic.Uint64
	coalesced   atomic.Uint64
	rateLimited atomic.Uint64
	refusedDisk atomic.Uint64
	hookDropped atomic.Uint64
	rotated     atomic.Uint64
	lastErr     atomic.Pointer[string]
}

// dumpJob is one dump: accepted, waiting for its post window, then written.
type dumpJob struct {
	seq      uint64
	t0       int64
	reason   string
	from, to int64
	due      int64
	trigs    []TriggerID
	records  []dumpinfo.Trigger
	topics   map[ingest.TopicID]*dumpTopic
	order    []ingest.TopicID
	writing  bool
	done     chan struct{}
	res      DumpResult
}

// dumpTopic is one topic's window in a dump.
type dumpTopic struct {
	t        *topic
	from, to int64
	post     int64
	// The window's first seq, found by the dumper soon after the trigger
	// (anchorPending) while the window start is still held, so messages
	// overwritten before the dump reads them are counted. Dumper only
	// (under d.mu while the job is pending).
	anchorFrom int64 // the from anchored (or tried); valid when tried
	anchorSeq  uint64
	anchorOK   bool // anchorSeq is exact
	tried      bool
}

func triggerRecord(id TriggerID, p *TriggerParams) dumpinfo.Trigger {
	return dumpinfo.Trigger{ID: uint64(id), Reason: p.Reason, Source: p.Source, Rule: p.Rule, Tag: p.Tag,
		Severity: p.Severity, TimeNs: p.TimeNs, PreNs: int64(p.Pre), PostNs: int64(p.Post), Params: p.Params}
}

// merge adds a trigger and its topic windows to the job (d.mu held).
func (j *dumpJob) merge(id TriggerID, rec dumpinfo.Trigger, sel []dumpTopic, from, to, due int64) {
	j.trigs = append(j.trigs, id)
	j.records = append(j.records, rec)
	j.from, j.to, j.due = min(j.from, from), max(j.to, to), max(j.due, due)
	for _, dt := range sel {
		if have := j.topics[dt.t.id]; have != nil {
			have.from, have.to = min(have.from, dt.from), max(have.to, dt.to)
			continue
		}
		dt.t.pins.Add(1)
		c := dt
		j.topics[dt.t.id] = &c
		j.order = append(j.order, dt.t.id)
	}
}

// forget drops finished jobs from byTrig once it grows large (d.mu held).
func (d *dumpState) forget() {
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
// now on. Leftover .tmp files from an earlier run are reported in Status.
func (r *Recorder) Start() error {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.closedFlag.Load() {
		return ErrClosed
	}
	if d.running || d.stopped {
		return fmt.Errorf("engine: Start called twice")
	}
	d.running = true
	if r.cfg.Dump.Dir == "" {
		return nil
	}
	go r.dumper()
	go r.runHooks()
	return nil
}

// Stop stops accepting triggers and writes every pending dump now (with the
// part of its post window recorded so far), spending at most
// Dump.StopTimeout; a dump still being written at the deadline is abandoned,
// its .tmp removed, and reported with ErrStopped. Hooks get the results
// queued before Stop returns. Stop is idempotent.
func (r *Recorder) Stop() {
	d := r.d
	d.mu.Lock()
	if !d.running {
		d.mu.Unlock()
		return
	}
	d.running = false
	d.stopped = true
	d.mu.Unlock()
	if r.cfg.Dump.Dir == "" {
		return
	}
	d.deadline.Store(time.Now().Add(r.cfg.Dump.StopTimeout).UnixNano())
	close(d.stop)
	<-d.done
	close(d.hookq)
	<-d.hookDone
}

// IsDumping reports whether a dump file is being written right now.
func (r *Recorder) IsDumping() bool { return r.d.writing.Load() }

// dumper is the single goroutine that writes dumps, one at a time.
func (r *Recorder) dumper() {
	d := r.d
	defer close(d.done)
	tick := time.NewTicker(r.cfg.Dump.PollInterval)
	defer tick.Stop()
	for {
		stopping := false
		select {
		case <-d.stop:
			stopping = true
		case <-d.wake:
		case <-tick.C:
		}
		r.anchorPending()
		for {
			j := r.nextJob(stopping)
			if j == nil {
				break
			}
			r.runJob(j, stopping)
		}
		if stopping {
			return
		}
	}
}

// anchorPending finds the first seq of each pending dump's topic windows
// not anchored yet, while their start is still in the ring (a ring too small
// for its window overwrites it before the dump is written). The scans run
// without d.mu; a window whose start moved (merge) meanwhile is tried again.
func (r *Recorder) anchorPending() {
	d := r.d
	type want struct {
		dt   *dumpTopic
		from int64
	}
	var ws []want
	d.mu.Lock()
	for _, j := range d.pending {
		for _, id := range j.order {
			if dt := j.topics[id]; !dt.tried || dt.anchorFrom != dt.from {
				ws = append(ws, want{dt, dt.from})
			}
		}
	}
	d.mu.Unlock()
	for i := range ws {
		w := &ws[i]
		c := cursor{r: w.dt.t.ring}
		seq, ok, found := c.anchor(w.from, false)
		if !found {
			continue // nothing at or after from yet: try again later
		}
		d.mu.Lock()
		if w.dt.from == w.from {
			w.dt.anchorFrom, w.dt.anchorSeq, w.dt.anchorOK, w.dt.tried = w.from, seq, ok, true
		}
		d.mu.Unlock()
	}
}

// nextJob takes the earliest due job (any job when stopping).
func (r *Recorder) nextJob(all bool) *dumpJob {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	now := r.clk.Now()
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
func (r *Recorder) runJob(j *dumpJob, stopping bool) {
	d := r.d
	d.writing.Store(true)
	res := r.writeDump(j)
	d.writing.Store(false)
	res.Triggers = j.trigs
	for _, rec := range j.records {
		res.Reasons = append(res.Reasons, rec.Reason)
	}
	if res.Err != nil {
		d.failed.Add(1)
		s := res.Err.Error()
		d.lastErr.Store(&s)
	} else {
		d.written.Add(1)
		r.rotate(res.Path)
	}
	j.res = res
	for _, id := range j.order {
		t := j.topics[id].t
		t.pins.Add(-1)
		r.maybeFree(t)
	}
	close(j.done)
	if res.Err == nil {
		select {
		case d.hookq <- res:
		default:
			d.hookDropped.Add(1)
		}
	}
}

// dumpName is "<UTC>_<reason>_<seq><ext>" (ext ".pack" by default).
func dumpName(t0 int64, reason string, seq uint64, ext string) string {
	ts := time.Unix(0, t0).UTC().Format("20060102T150405.000000000Z")
	clean := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
			return c
		}
		return '-'
	}, reason)
	if len(clean) > 64 {
		clean = clean[:64]
	}
	return fmt.Sprintf("%s_%s_%d%s", ts, clean, seq, ext)
}

// writeDump writes j's file: .tmp, synced, renamed, directory synced.
func (r *Recorder) writeDump(j *dumpJob) DumpResult {
	res := DumpResult{StartNs: j.from, EndNs: j.to}
	dc := &r.cfg.Dump
	var estimate int64 = 64 << 10 // header, index, dump info
	for _, id := range j.order {
		estimate += j.topics[id].estimate()
	}
	if dc.MinFreeDisk > 0 {
		free, err := freeDisk(dc.Dir)
		if err != nil {
			res.Err = err
			return res
		}
		if free-estimate < dc.MinFreeDisk {
			r.d.refusedDisk.Add(1)
			res.Err = fmt.Errorf("%w: %d bytes free, dump needs up to %d, min_free_disk %d (dump %d %q refused, existing dumps kept)",
				ErrDiskLow, free, estimate, dc.MinFreeDisk, j.seq, j.reason)
			return res
		}
	}
	final := filepath.Join(dc.Dir, dumpName(j.t0, j.reason, j.seq, dc.Extension))
	tmp := final + tmpExt
	w, err := dc.NewWriter(tmp, DumpWriterOptions{Compression: dc.Compression, FrameSize: dc.FrameSize,
		WriterName: dc.WriterName, CreatedNs: r.clk.Now(), SizeHint: estimate})
	if err != nil {
		os.Remove(tmp)
		res.Err = err
		return res
	}
	out := w
	var ro *reorderStage
	if dc.ReorderWindow > 0 {
		ro = newReorderStage(w, int64(dc.ReorderWindow), dc.ReorderMaxMessages)
		out = ro
	}
	info, err := r.copyWindow(j, out, &res)
	if err == nil && ro != nil {
		err = ro.flush()
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
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(dc.Dir)
	}
	if err != nil {
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		res.Err = fmt.Errorf("engine: dump %d %q: %w", j.seq, j.reason, err)
		return res
	}
	if st, err := os.Stat(final); err == nil {
		res.Bytes = st.Size()
	}
	res.Path = final
	return res
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// mergeSrc is one topic's cursor in the k-way merge.
type mergeSrc struct {
	dt   *dumpTopic
	c    cursor
	h    entryHeader // the next entry, peeked (not yet copied)
	acct dumpinfo.TopicAccount
	// inWindow counts the messages written from the window (not the
	// keep_last ones before it).
	inWindow uint64
	// anchor is the seq of the window's first message, exact when
	// anchorOK (see dumpTopic).
	anchor   uint64
	anchorOK bool
}

type mergeHeap []*mergeSrc

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, k int) bool {
	if h[i].h.capNs != h[k].h.capNs {
		return h[i].h.capNs < h[k].h.capNs
	}
	return h[i].dt.t.id < h[k].dt.t.id
}
func (h mergeHeap) Swap(i, k int) { h[i], h[k] = h[k], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeSrc)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// position places s.c at the topic's window start, or keep_last messages
// before it.
func (s *mergeSrc) position() {
	s.c.seekTime(s.dt.from)
	keep := s.dt.t.settings.ring.keepLast
	if keep == 0 {
		return
	}
	start := s.c.next
	s.c.seekOldest()
	for {
		h, ok := s.c.peek()
		if !ok || h.seq+keep >= start {
			return
		}
		s.c.skip(h)
	}
}

// estimate returns an upper bound of the bytes dt's window takes in a dump
// (payloads plus per-message framing), scanning headers only.
func (dt *dumpTopic) estimate() int64 {
	s := mergeSrc{dt: dt}
	s.c.r = dt.t.ring
	s.position()
	var n int64
	for {
		h, ok := s.c.peek()
		if !ok || h.capNs > dt.to {
			return n
		}
		n += int64(h.n) + perMessageOverhead + int64(len(dt.t.info.Name)+len(dt.t.info.Channel))
		s.c.skip(h)
	}
}

// perMessageOverhead bounds a message's framing in a pack frame meta.
const perMessageOverhead = 48

// advance peeks the header of the window's next message into s.h.
func (s *mergeSrc) advance() bool {
	h, ok := s.c.peek()
	if !ok || h.capNs > s.dt.to {
		return false
	}
	s.h = h
	return true
}

// How often copyWindow looks at Stop's deadline.
const (
	stopCheckMessages = 1024
	stopCheckBytes    = 8 << 20
)

// copyWindow merges every selected topic's window in capture-time order into
// w and returns the dump's self-description.
func (r *Recorder) copyWindow(j *dumpJob, w DumpWriter, res *DumpResult) (dumpinfo.Info, error) {
	h := make(mergeHeap, 0, len(j.order))
	srcs := make([]*mergeSrc, 0, len(j.order))
	for _, id := range j.order {
		dt := j.topics[id]
		s := &mergeSrc{dt: dt, anchor: dt.anchorSeq, anchorOK: dt.anchorOK && dt.tried && dt.anchorFrom == dt.from}
		if !s.anchorOK { // not anchored after the trigger: try now, before reading
			c := cursor{r: dt.t.ring}
			s.anchor, s.anchorOK, _ = c.anchor(dt.from, true)
		}
		s.c.r = dt.t.ring
		s.position()
		s.acct = dumpinfo.TopicAccount{Topic: pack.Topic(dt.t.info.Name, dt.t.info.Channel), Type: dt.t.info.Type}
		srcs = append(srcs, s)
		if s.advance() {
			h = append(h, s)
		}
	}
	heap.Init(&h)
	// A writer that can reserve room in its next frame gets each payload
	// copied straight from the ring; others get it through scratch.
	rs, direct := w.(dumpReserver)
	var scratch []byte
	n, sinceCheck := 0, uint64(0)
	for h.Len() > 0 {
		s := h[0]
		size := int(s.h.n)
		var data []byte
		if direct {
			data = rs.Reserve(size)
		} else {
			if cap(scratch) < size {
				scratch = make([]byte, size)
			}
			data = scratch[:size]
		}
		if s.c.copyEntry(s.h, data) {
			var err error
			if direct {
				err = rs.Commit(&s.dt.t.info, s.h.genNs, s.h.capNs, data)
			} else {
				err = w.WriteMessage(&s.dt.t.info, s.h.genNs, s.h.capNs, data)
			}
			if err != nil {
				return dumpinfo.Info{}, err
			}
			a := &s.acct
			if a.Messages == 0 {
				a.FirstNs = s.h.capNs
			}
			a.Messages++
			a.Bytes += s.h.n
			sinceCheck += s.h.n
			a.LastNs = s.h.capNs
			if s.h.capNs >= s.dt.from {
				s.inWindow++
			}
		} // else overwritten while copied: advance re-peeks and counts it lost
		if s.advance() {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
		// Stop's deadline is checked every stopCheckMessages messages or
		// stopCheckBytes bytes, whichever comes first (large camera frames
		// would otherwise take a long time to reach the message count).
		if n++; n%stopCheckMessages == 0 || sinceCheck >= stopCheckBytes {
			sinceCheck = 0
			if dl := r.d.deadline.Load(); dl != 0 && time.Now().UnixNano() > dl {
				return dumpinfo.Info{}, ErrStopped
			}
		}
	}
	info := dumpinfo.Info{Triggers: j.records, Writer: r.cfg.Dump.WriterName, StartNs: j.from, EndNs: j.to, CreatedNs: r.clk.Now()}
	if host, err := os.Hostname(); err == nil {
		info.Host = host
	}
	var upper, startLost []string
	for _, s := range srcs {
		// Overwritten: the window's messages (seqs from its anchor up to
		// where the merge stopped) not written, whether evicted before
		// the dump or overwritten while it read them.
		if seq := s.anchor; s.anchorOK && s.c.next >= seq+s.inWindow {
			s.acct.Overwritten = s.c.next - seq - s.inWindow
		} else {
			s.acct.Overwritten = s.c.lost
			startLost = append(startLost, s.acct.Topic)
		}
		// Drops whose capture time falls in the topic's window, not the
		// running totals.
		var exactO, exactB, exactS bool
		s.acct.Oversize, exactO = s.dt.t.ring.oversize.window(s.dt.from, s.dt.to)
		s.acct.SkippedBusy, exactB = s.dt.t.skippedBusy.window(s.dt.from, s.dt.to)
		s.acct.LostAtSource, exactS = s.dt.t.sourceLost.window(s.dt.from, s.dt.to)
		if !exactO || !exactB || !exactS {
			upper = append(upper, s.acct.Topic)
		}
		res.Messages += s.acct.Messages
		res.Lost += s.acct.Overwritten
		info.Topics = append(info.Topics, s.acct)
	}
	if len(upper) > 0 || len(startLost) > 0 {
		info.Labels = map[string]string{}
		if len(upper) > 0 {
			info.Labels[dumpinfo.DropsUpperBoundLabel] = strings.Join(upper, ",")
		}
		if len(startLost) > 0 {
			info.Labels[dumpinfo.StartLostLabel] = strings.Join(startLost, ",")
		}
	}
	return info, nil
}

// rotate deletes the oldest dumps beyond MaxFiles / MaxTotalBytes, never
// the one just written.
func (r *Recorder) rotate(newest string) {
	dc := &r.cfg.Dump
	if dc.MaxFiles == 0 && dc.MaxTotalBytes == 0 {
		return
	}
	files, err := filepath.Glob(filepath.Join(dc.Dir, "*"+dc.Extension))
	if err != nil {
		return
	}
	sort.Strings(files) // names start with the UTC time: oldest first
	sizes := make([]int64, len(files))
	var total int64
	for i, f := range files {
		if st, err := os.Stat(f); err == nil {
			sizes[i] = st.Size()
		}
		total += sizes[i]
	}
	maxFiles := dc.MaxFiles
	if maxFiles == 0 {
		maxFiles = math.MaxInt
	}
	maxBytes := dc.MaxTotalBytes
	if maxBytes == 0 {
		maxBytes = math.MaxInt64
	}
	count := len(files)
	for i, f := range files {
		if count <= maxFiles && total <= maxBytes {
			break
		}
		if f == newest {
			continue
		}
		if err := os.Remove(f); err == nil {
			count--
			total -= sizes[i]
			r.d.rotated.Add(1)
		}
	}
}

// Hook is told about every finalized dump (upload, archive, notify). It is
// called on the recorder's hook goroutine, one result at a time; a slow hook
// delays only later hook calls, never recording or the next dump.
type Hook interface {
	DumpFinished(res DumpResult)
}

// HookFunc adapts a function to Hook.
type HookFunc func(DumpResult)

// DumpFinished calls f.
func (f HookFunc) DumpFinished(res DumpResult) { f(res) }

func (r *Recorder) runHooks() {
	defer close(r.d.hookDone)
	for res := range r.d.hookq {
		for _, h := range r.cfg.Dump.Hooks {
			h.DumpFinished(res)
		}
	}
}
