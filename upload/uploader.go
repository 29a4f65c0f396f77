package upload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
)

// Converted is one file a Convert function wrote.
type Converted struct {
	Table string // {table} of the key template
	Path  string // the file
}

// ConvertFunc converts the dump at path into files under dir (Parquet, by
// the recorder's wiring through dumpfile).
type ConvertFunc func(path, dir string) ([]Converted, error)

// tmpDirName is where a dump's converted files wait for their upload.
const tmpDirName = ".edr-upload-tmp"

// Uploader is the durable upload queue of one dump directory: finalized
// dumps are queued (Enqueue, and a scan of the directory at Start and every
// Options.Rescan), uploaded one at a time oldest first by one goroutine,
// retried with back-off, and leave the queue only once the server
// confirmed them. It implements dump.Keeper, so rotation keeps queued
// dumps but when a new dump needs their room (min_free_disk).
//
// Its methods are safe for concurrent use.
type Uploader struct {
	o       Options
	key     *Template
	pkey    *Template
	window  Window
	c       *client
	log     *slog.Logger
	convert ConvertFunc

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu          sync.Mutex
	started     bool
	queue       []*entry // oldest first (by name)
	sent        map[string]sentRec
	current     *entry
	curSize     int64
	curCtx      context.Context    // the current upload's: cancelled when its dump is evicted
	curCancel   context.CancelFunc // cancels curCtx
	curDone     chan struct{}      // closed once the current upload let go of its file
	uploaded    uint64
	upBytes     uint64
	evicted     uint64
	evictedFor  map[string]uint64 // by dump.Eviction.Reason
	lastEvicted string
	ledgerGone  int // ledger lines naming dumps that are gone
	missing     uint64
	globalFails int
	globalUntil time.Time
	paused      string // why the whole queue waits until globalUntil (a server-wide error), "" when not
	lastErr     string
	lastErrKind string
	lastErrAt   time.Time
	journalErr  string
	setAside    []string // damaged copies of the journal and the ledger in the directory
	state       string
}

// New builds an Uploader over o (resolved: Options.Resolve) for the dump
// directory o.Dir. convert is needed when o.Parquet is set.
func New(o Options, convert ConvertFunc) (*Uploader, error) {
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, optErr("dir", "required (the dump directory)")
	}
	if o.Parquet && convert == nil {
		return nil, optErr("parquet", "no converter")
	}
	u := &Uploader{o: o, log: o.Logger, convert: convert, done: make(chan struct{}), wake: make(chan struct{}, 1),
		sent: map[string]sentRec{}, evictedFor: map[string]uint64{}, state: "stopped"}
	u.key, _ = ParseTemplate(o.Key)
	u.pkey, _ = ParseTemplate(o.ParquetKey)
	u.window, _ = ParseWindow(o.Window)
	u.c = newClient(&o)
	u.ctx, u.cancel = context.WithCancel(context.Background())
	return u, nil
}

// Start reads the journal and the ledger, queues every dump of the
// directory the server has not confirmed, and starts uploading.
func (u *Uploader) Start() error {
	if err := os.MkdirAll(u.o.Dir, dump.DirMode(u.o.FileMode)); err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(u.o.Dir, tmpDirName))
	// the queue's files follow the dumps' mode, those of an older version
	// (0644) too; the journal is rewritten below
	if err := os.Chmod(filepath.Join(u.o.Dir, LedgerName), u.o.FileMode); err != nil && !errors.Is(err, os.ErrNotExist) {
		u.log.Warn("upload ledger: cannot give it the dumps' mode", "err", err)
	}
	q, err := readJournal(u.o.Dir)
	if err != nil {
		aside, aerr := setAside(u.o.Dir, JournalName)
		u.log.Error("upload journal damaged; set aside, the queue is rebuilt from the dump directory", "err", err, "moved_to", aside, "set_aside_err", aerr)
		q = nil
	}
	sent, dmg, err := readLedger(u.o.Dir)
	rewrite := false
	switch {
	case err != nil:
		aside, aerr := setAside(u.o.Dir, LedgerName)
		u.log.Error("upload ledger unreadable; set aside, the dumps it listed are checked against the server again", "err", err,
			"moved_to", aside, "set_aside_err", aerr)
		sent = map[string]sentRec{}
	case dmg.Torn:
		u.log.Warn("upload ledger: its last line was torn (a power cut while it was appended); rewritten without it", "line", dmg.FirstLine)
		rewrite = true
	case dmg.Bad > 0:
		// not a power cut: keep the damaged file for whoever looks into it
		aside, aerr := setAside(u.o.Dir, LedgerName)
		u.log.Error("upload ledger holds garbage: lines that are no ledger record; set aside, rewritten with its valid records (the dumps of the garbage lines are checked against the server again)",
			"bad_lines", dmg.Bad, "first_bad_line", dmg.FirstLine, "valid_records", len(sent), "moved_to", aside, "set_aside_err", aerr)
		rewrite = true
	}
	l, err := dump.OpenDir(u.o.Dir).List()
	if err != nil {
		return err
	}
	present := map[string]dump.File{}
	for _, f := range l.Dumps {
		present[f.Name] = f
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var keep []sentRec
	for name, r := range sent {
		if _, ok := present[name]; ok {
			u.sent[name] = r
			keep = append(keep, r)
		}
	}
	if len(keep) != len(sent) || rewrite {
		sort.Slice(keep, func(i, j int) bool { return keep[i].File < keep[j].File })
		u.noteJournal(writeLedger(u.o.Dir, keep, u.o.FileMode))
	}
	now := u.o.Now()
	for _, e := range q {
		if _, ok := present[e.File]; !ok {
			u.missing++
			u.log.Warn("queued dump is gone from the dump directory; dropped from the upload queue", "file", e.File)
			continue
		}
		if _, ok := u.sent[e.File]; ok {
			continue
		}
		if !slices.ContainsFunc(u.queue, func(x *entry) bool { return x.File == e.File }) {
			u.queue = append(u.queue, e) // (Enqueue may have come first)
		}
	}
	for _, f := range l.Dumps {
		u.addLocked(f.Name, f.Size, now)
	}
	u.sortLocked()
	u.saveLocked()
	u.setAside = setAsideFiles(u.o.Dir)
	u.started = true
	u.state = "idle"
	go u.run()
	u.log.Info("upload queue", "endpoint", u.o.Endpoint, "bucket", u.o.Bucket, "queued", len(u.queue), "window", u.o.Window,
		"bandwidth", u.o.Bandwidth)
	return nil
}

// Stop stops the uploader; an upload in flight is abandoned where it is and
// resumes at the next Start. It is idempotent.
func (u *Uploader) Stop() {
	u.cancel()
	u.mu.Lock()
	started := u.started
	u.mu.Unlock()
	if started {
		<-u.done
	}
	u.c.close()
}

// Enqueue queues a finalized dump of the directory (the dump pipeline's
// hook calls it). A dump already queued or uploaded is left as it is.
func (u *Uploader) Enqueue(path string) error {
	if filepath.Clean(filepath.Dir(path)) != filepath.Clean(u.o.Dir) {
		return fmt.Errorf("upload: %s is not in the dump directory %s", path, u.o.Dir)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	u.mu.Lock()
	if u.addLocked(filepath.Base(path), st.Size(), u.o.Now()) {
		u.sortLocked()
		u.saveLocked()
	}
	u.mu.Unlock()
	u.poke()
	return nil
}

func (u *Uploader) addLocked(name string, size int64, now time.Time) bool {
	if _, ok := u.sent[name]; ok {
		return false
	}
	for _, e := range u.queue {
		if e.File == name {
			return false
		}
	}
	u.queue = append(u.queue, &entry{File: name, Size: size, QueuedNs: now.UnixNano()})
	return true
}

func (u *Uploader) sortLocked() {
	sort.SliceStable(u.queue, func(i, j int) bool { return u.queue[i].File < u.queue[j].File })
}

// saveLocked writes the journal; a failure (a full disk) is reported in
// the status and the log, and the queue goes on in memory.
func (u *Uploader) saveLocked() {
	u.noteJournal(writeJournal(u.o.Dir, u.queue, u.o.FileMode))
}

func (u *Uploader) noteJournal(err error) {
	if err == nil {
		if u.journalErr != "" {
			u.log.Info("upload journal writable again")
		}
		u.journalErr = ""
		return
	}
	if u.journalErr != err.Error() {
		u.log.Error("upload journal not written; the queue goes on in memory and is rebuilt from the dump directory after a restart", "err", err)
	}
	u.journalErr = err.Error()
}

func (u *Uploader) poke() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Keep reports whether the dump at path is still queued: rotation must not
// delete it (dump.Keeper).
func (u *Uploader) Keep(path string) bool {
	name := filepath.Base(path)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range u.queue {
		if e.File == name {
			return true
		}
	}
	return false
}

// Evicted is told that rotation deleted a queued dump to make room for a
// new one: it leaves the queue, counted by reason and logged
// (dump.Keeper). An upload of it in flight is cut, and Evicted returns
// once that upload closed the file (at most evictWait), so the room it
// held is free.
func (u *Uploader) Evicted(ev dump.Eviction) {
	name := filepath.Base(ev.Path)
	u.mu.Lock()
	var wait chan struct{}
	for i, e := range u.queue {
		if e.File != name {
			continue
		}
		u.queue = append(u.queue[:i], u.queue[i+1:]...)
		u.evicted++
		u.evictedFor[ev.Reason]++
		u.lastEvicted = fmt.Sprintf("%s deleted before it was uploaded: %s", name, ev.Why)
		u.setErrLocked(u.lastEvicted, "")
		u.log.Warn("queued dump deleted before it was uploaded", "file", name, "reason", ev.Reason, "why", ev.Why)
		u.saveLocked()
		if e == u.current && u.curCancel != nil {
			u.curCancel()
			wait = u.curDone
		}
		break
	}
	u.mu.Unlock()
	if wait != nil {
		t := time.NewTimer(evictWait)
		defer t.Stop()
		select {
		case <-wait:
		case <-t.C:
		}
	}
}

// evictWait bounds how long Evicted waits for the upload of the dump it
// removes to let go of the file.
const evictWait = 2 * time.Second

func (u *Uploader) setErrLocked(s, kind string) {
	u.lastErr, u.lastErrKind, u.lastErrAt = s, kind, u.o.Now()
}

// run is the worker.
func (u *Uploader) run() {
	defer close(u.done)
	rescan := time.NewTicker(u.o.Rescan)
	defer rescan.Stop()
	for {
		if u.ctx.Err() != nil {
			u.setState("stopped")
			return
		}
		e, wait := u.next()
		if e == nil {
			t := time.NewTimer(wait)
			select {
			case <-u.ctx.Done():
			case <-u.wake:
			case <-rescan.C:
				u.rescan()
			case <-t.C:
			}
			t.Stop()
			continue
		}
		u.runEntry(e)
	}
}

// next returns the entry to upload now, or how long to wait.
func (u *Uploader) next() (*entry, time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.o.Now()
	const idle = time.Minute
	if len(u.queue) == 0 {
		u.state = "idle"
		return nil, idle
	}
	if now.Before(u.globalUntil) {
		u.state = "paused"
		return nil, u.globalUntil.Sub(now)
	}
	if !u.window.Open(now) {
		u.state = "waiting for window"
		return nil, min(max(u.window.NextOpen(now).Sub(now), time.Second), idle)
	}
	var best *entry
	soonest := idle
	for _, e := range u.queue {
		if e.NextTryNs > now.UnixNano() {
			soonest = min(soonest, time.Duration(e.NextTryNs-now.UnixNano()))
			continue
		}
		best = e
		break
	}
	if best == nil {
		u.state = "backing off"
		return nil, soonest
	}
	u.state = "uploading"
	u.current, u.curSize = best, best.Size
	u.curCtx, u.curCancel = context.WithCancel(u.ctx)
	u.curDone = make(chan struct{})
	return best, 0
}

func (u *Uploader) setState(s string) {
	u.mu.Lock()
	u.state = s
	u.mu.Unlock()
}

// rescan queues the dumps of the directory the queue missed (a hook result
// dropped, a dump copied in by hand), and forgets, in memory and, once
// enough are gone, in the ledger, the confirmed dumps that are gone
// (rotated, deleted after upload): the ledger stays the size of the
// directory.
func (u *Uploader) rescan() {
	l, err := dump.OpenDir(u.o.Dir).List()
	if err != nil {
		u.log.Warn("upload: scanning the dump directory", "err", err)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	added := false
	present := make(map[string]bool, len(l.Dumps))
	for _, f := range l.Dumps {
		present[f.Name] = true
		added = u.addLocked(f.Name, f.Size, u.o.Now()) || added
	}
	if added {
		u.sortLocked()
		u.saveLocked()
	}
	u.setAside = setAsideFiles(u.o.Dir)
	for name := range u.sent {
		if !present[name] {
			delete(u.sent, name)
			u.ledgerGone++
		}
	}
	if u.ledgerGone > ledgerCompactAfter {
		recs := make([]sentRec, 0, len(u.sent))
		for _, r := range u.sent {
			recs = append(recs, r)
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].File < recs[j].File })
		u.noteJournal(writeLedger(u.o.Dir, recs, u.o.FileMode))
		u.ledgerGone = 0
	}
}

// ledgerCompactAfter is how many ledger lines may name gone dumps before
// the ledger is rewritten.
const ledgerCompactAfter = 256

// dumpTime is the time a dump's key is dated by: the trigger time its
// name carries (dump.Name), else its first trigger's (as the Parquet
// tables' date= partition), else the start of its window, else its
// modification time.
func dumpTime(path string) time.Time {
	base := filepath.Base(path)
	if i := strings.IndexByte(base, '_'); i > 0 {
		if t, err := time.Parse("20060102T150405.000000000Z", base[:i]); err == nil {
			return t
		}
	}
	if in, err := dumpfile.ReadInfo(path); err == nil {
		if len(in.Triggers) > 0 {
			return time.Unix(0, in.Triggers[0].TimeNs)
		}
		if in.StartNs != 0 {
			return time.Unix(0, in.StartNs)
		}
	}
	if st, err := os.Stat(path); err == nil {
		return st.ModTime()
	}
	return time.Now()
}

// KeyOf returns the object key of the dump at path.
func (u *Uploader) KeyOf(path string) string {
	return u.key.Expand(KeyFields{Prefix: u.o.Prefix, Vehicle: u.o.Vehicle, Time: dumpTime(path), File: filepath.Base(path)})
}

func (u *Uploader) runEntry(e *entry) {
	path := filepath.Join(u.o.Dir, e.File)
	key := u.KeyOf(path)
	u.mu.Lock()
	e.Key = key
	dumpDone := e.DumpDone
	uploadID := e.UploadID
	ctx, cancel, done := u.curCtx, u.curCancel, u.curDone
	u.mu.Unlock()
	defer func() { cancel(); close(done) }()
	var res sendResult
	var err error
	if !dumpDone {
		res, err = u.c.sendFile(ctx, path, key, sendOpts{Sums: &e.sums, PartSize: u.o.PartSize, UploadID: uploadID,
			SetUploadID: func(id string) error {
				u.mu.Lock()
				defer u.mu.Unlock()
				e.UploadID = id
				err := writeJournal(u.o.Dir, u.queue, u.o.FileMode)
				u.noteJournal(err)
				return nil // the server-side upload is found again by listing if the journal lost it
			},
			Window: func() bool { return u.window.Open(u.o.Now()) }})
		if err == nil {
			u.log.Info("dump uploaded", "file", e.File, "key", key, "bytes", res.Size, "crc32c", res.CRC32C,
				"already_there", res.Already, "parts", res.Parts, "parts_resumed", res.Resumed)
			if u.o.Parquet {
				u.mu.Lock()
				e.DumpDone = true
				u.saveLocked()
				u.mu.Unlock()
			}
		}
	}
	if err == nil && u.o.Parquet {
		err = u.sendParquet(ctx, path)
	}
	var seal *SealInfo
	if err == nil && u.o.Seal != nil {
		seal = u.o.Seal(path) // reads the dump: outside the lock
	}
	u.finish(e, path, key, res, seal, err)
}

// sendParquet converts the dump and uploads its files.
func (u *Uploader) sendParquet(ctx context.Context, path string) error {
	tmp := filepath.Join(u.o.Dir, tmpDirName)
	dir := filepath.Join(tmp, filepath.Base(path))
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	// the tables hold what the dump holds: the dumps' mode, whatever the
	// umask (the converter gives its files and directories the same)
	if os.MkdirAll(tmp, dump.DirMode(u.o.FileMode)) == nil {
		os.Chmod(tmp, dump.DirMode(u.o.FileMode))
	}
	files, err := u.convert(path, dir)
	if err != nil {
		return &Error{File: path, Key: "-", Op: "convert to parquet", Err: err}
	}
	for _, f := range files {
		key := u.pkey.Expand(KeyFields{Prefix: u.o.Prefix, Vehicle: u.o.Vehicle, Time: dumpTime(path), File: filepath.Base(path), Table: f.Table})
		if _, err := u.c.sendFile(ctx, f.Path, key, sendOpts{PartSize: u.o.PartSize}); err != nil {
			return err
		}
		u.log.Info("parquet uploaded", "dump", filepath.Base(path), "table", f.Table, "key", key)
	}
	return nil
}

func (u *Uploader) finish(e *entry, path, key string, res sendResult, seal *SealInfo, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.current, u.curCtx, u.curCancel = nil, nil, nil
	now := u.o.Now()
	if !slices.Contains(u.queue, e) && err != nil {
		return // evicted meanwhile (Evicted counted and logged it)
	}
	switch {
	case err == nil:
		u.removeLocked(e)
		r := sentRec{File: e.File, Size: res.Size, CRC32C: res.CRC32C, Key: key, AtNs: now.UnixNano(), Seal: seal}
		u.sent[e.File] = r
		u.uploaded++
		u.upBytes += uint64(res.Size)
		u.globalFails, u.globalUntil, u.paused = 0, time.Time{}, ""
		u.noteJournal(appendLedger(u.o.Dir, r, u.o.FileMode))
		u.saveLocked()
		if u.o.DeleteAfterUpload {
			if u.o.BeforeDelete != nil {
				u.o.BeforeDelete(path) // the chain records it as rotated, not deleted
			}
			if err := os.Remove(path); err != nil {
				u.log.Warn("delete_after_upload: could not delete the uploaded dump", "file", path, "err", err)
			} else {
				u.log.Info("uploaded dump deleted locally (delete_after_upload)", "file", path, "key", key)
			}
		}
	case errors.Is(err, ErrMissing):
		u.removeLocked(e)
		u.missing++
		u.setErrLocked(err.Error(), KindFile)
		u.log.Warn("queued dump is gone; dropped from the upload queue", "file", e.File)
		u.saveLocked()
	case errors.Is(err, errWindowClosed), u.ctx.Err() != nil:
		// not a failure: the window closed or the uploader stops; resumes later
	default:
		kind := KindOf(err)
		e.Attempts++
		e.LastError, e.LastErrorKind = err.Error(), kind
		e.LastAttemptNs = now.UnixNano()
		u.setErrLocked(err.Error(), kind)
		if serverWide(err) {
			// nothing to do with this dump: the whole queue pauses, once,
			// and this dump (the oldest runnable) is the first tried after
			u.globalFails++
			d := backoff(u.globalFails, u.o.RetryMin, u.o.RetryMax)
			u.globalUntil = now.Add(d)
			e.NextTryNs = 0
			u.paused = strings.TrimPrefix(classify(err).Error(), "upload: ")
			u.log.Warn("upload failed; will retry: the whole queue pauses (server-wide error)", "kind", kind, "file", e.File, "key", key,
				"queued", len(u.queue), "pause", u.globalFails, "retry_in", d.Round(time.Millisecond), "err", err)
		} else {
			d := backoff(e.Attempts, u.o.RetryMin, u.o.RetryMax)
			e.NextTryNs = now.Add(d).UnixNano()
			u.log.Warn("upload failed; will retry", "kind", kind, "file", e.File, "key", key, "attempt", e.Attempts,
				"retry_in", d.Round(time.Millisecond), "err", err)
		}
		u.saveLocked()
	}
}

func (u *Uploader) removeLocked(e *entry) {
	for i, x := range u.queue {
		if x == e {
			u.queue = append(u.queue[:i], u.queue[i+1:]...)
			return
		}
	}
}

// backoff returns how long to wait before attempt n+1 after n failed ones:
// lo·2^(n-1) capped at hi, with "equal jitter" (half of it fixed, half
// random) so a fleet that lost its server does not come back in step.
func backoff(n int, lo, hi time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
