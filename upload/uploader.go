package upload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
)

// Converted is one file a Convert function wrote.
type Converted struct {
	Table string // {table} of the key template
	Path  string // the file
}

// ConvertFunc converts the dump at path into files under dir (Parquet, by
// the recorder's wiring through internal/dumpfile).
type ConvertFunc func(path, dir string) ([]Converted, error)

// tmpDirName is where a dump's converted files wait for their upload.
const tmpDirName = ".edr-upload-tmp"

// Uploader is the durable upload queue of one dump directory: finalized
// dumps are queued (Enqueue, and a scan of the directory at Start and every
// Options.Rescan), uploaded one at a time oldest first by one goroutine,
// retried with back-off, and leave the queue only once the server
// confirmed them. It implements dump.Keeper, so rotation keeps queued
// dumps unless the disk is critically low.
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
	uploaded    uint64
	upBytes     uint64
	evicted     uint64
	lastEvicted string
	ledgerGone  int // ledger lines naming dumps that are gone
	missing     uint64
	globalFails int
	globalUntil time.Time
	lastErr     string
	lastErrAt   time.Time
	journalErr  string
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
		sent: map[string]sentRec{}, state: "stopped"}
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
	if err := os.MkdirAll(u.o.Dir, 0o755); err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(u.o.Dir, tmpDirName))
	q, err := readJournal(u.o.Dir)
	if err != nil {
		aside := filepath.Join(u.o.Dir, JournalName+".bad")
		os.Rename(filepath.Join(u.o.Dir, JournalName), aside)
		u.log.Error("upload journal unreadable; set aside, the queue is rebuilt from the dump directory", "err", err, "moved_to", aside)
		q = nil
	}
	sent, bad, err := readLedger(u.o.Dir)
	if err != nil {
		u.log.Error("upload ledger unreadable; dumps it listed are checked against the server again", "err", err)
		sent = map[string]sentRec{}
	} else if bad > 0 {
		u.log.Warn("upload ledger: lines skipped (torn by a power cut?)", "lines", bad)
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
	if len(keep) != len(sent) || bad > 0 {
		sort.Slice(keep, func(i, j int) bool { return keep[i].File < keep[j].File })
		u.noteJournal(writeLedger(u.o.Dir, keep))
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
	u.noteJournal(writeJournal(u.o.Dir, u.queue))
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

// Evicted is told that rotation deleted a queued dump (the disk was
// critically low): it leaves the queue, counted and logged (dump.Keeper).
func (u *Uploader) Evicted(path, why string) {
	name := filepath.Base(path)
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, e := range u.queue {
		if e.File == name {
			u.queue = append(u.queue[:i], u.queue[i+1:]...)
			u.evicted++
			u.lastEvicted = fmt.Sprintf("%s deleted before it was uploaded: %s", name, why)
			u.setErrLocked(u.lastEvicted)
			u.log.Warn("queued dump deleted before it was uploaded", "file", name, "why", why)
			u.saveLocked()
			return
		}
	}
}

func (u *Uploader) setErrLocked(s string) {
	u.lastErr, u.lastErrAt = s, u.o.Now()
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
		u.state = "backing off"
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
		u.noteJournal(writeLedger(u.o.Dir, recs))
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
	u.mu.Unlock()
	var res sendResult
	var err error
	if !dumpDone {
		res, err = u.c.sendFile(u.ctx, path, key, sendOpts{PartSize: u.o.PartSize, UploadID: uploadID,
			SetUploadID: func(id string) error {
				u.mu.Lock()
				defer u.mu.Unlock()
				e.UploadID = id
				err := writeJournal(u.o.Dir, u.queue)
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
		err = u.sendParquet(path)
	}
	u.finish(e, path, key, res, err)
}

// sendParquet converts the dump and uploads its files.
func (u *Uploader) sendParquet(path string) error {
	dir := filepath.Join(u.o.Dir, tmpDirName, filepath.Base(path))
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	files, err := u.convert(path, dir)
	if err != nil {
		return &Error{File: path, Key: "-", Op: "convert to parquet", Err: err}
	}
	for _, f := range files {
		key := u.pkey.Expand(KeyFields{Prefix: u.o.Prefix, Vehicle: u.o.Vehicle, Time: dumpTime(path), File: filepath.Base(path), Table: f.Table})
		if _, err := u.c.sendFile(u.ctx, f.Path, key, sendOpts{PartSize: u.o.PartSize}); err != nil {
			return err
		}
		u.log.Info("parquet uploaded", "dump", filepath.Base(path), "table", f.Table, "key", key)
	}
	return nil
}

func (u *Uploader) finish(e *entry, path, key string, res sendResult, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.current = nil
	now := u.o.Now()
	switch {
	case err == nil:
		u.removeLocked(e)
		r := sentRec{File: e.File, Size: res.Size, CRC32C: res.CRC32C, Key: key, AtNs: now.UnixNano()}
		u.sent[e.File] = r
		u.uploaded++
		u.upBytes += uint64(res.Size)
		u.globalFails, u.globalUntil = 0, time.Time{}
		u.noteJournal(appendLedger(u.o.Dir, r))
		u.saveLocked()
		if u.o.DeleteAfterUpload {
			if err := os.Remove(path); err != nil {
				u.log.Warn("delete_after_upload: could not delete the uploaded dump", "file", path, "err", err)
			} else {
				u.log.Info("uploaded dump deleted locally (delete_after_upload)", "file", path, "key", key)
			}
		}
	case errors.Is(err, ErrMissing):
		u.removeLocked(e)
		u.missing++
		u.setErrLocked(err.Error())
		u.log.Warn("queued dump is gone; dropped from the upload queue", "file", e.File)
		u.saveLocked()
	case errors.Is(err, errWindowClosed), u.ctx.Err() != nil:
		// not a failure: the window closed or the uploader stops; resumes later
	default:
		e.Attempts++
		e.LastError = err.Error()
		e.LastAttemptNs = now.UnixNano()
		d := backoff(e.Attempts, u.o.RetryMin, u.o.RetryMax)
		e.NextTryNs = now.Add(d).UnixNano()
		if serverWide(err) {
			u.globalFails++
			gd := backoff(u.globalFails, u.o.RetryMin, u.o.RetryMax)
			u.globalUntil = now.Add(gd)
			d = gd
		}
		u.setErrLocked(err.Error())
		u.log.Warn("upload failed; will retry", "file", e.File, "key", key, "attempt", e.Attempts, "retry_in", d.Round(time.Millisecond), "err", err)
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
