package upload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The queue's files in the dump directory (ARCHITECTURE.md does not list
// them as dumps: their names end in no dump extension).
const (
	// JournalName is the queue: what is still to upload, rewritten whole
	// (NAME.tmp, fsync, rename, directory fsync) at every change, so it is
	// always either the old or the new state. It holds {"version":1,
	// "queue":[]} when nothing is pending.
	JournalName = ".edr-upload.journal"
	// LedgerName lists the dumps the server confirmed, one JSON object a
	// line, appended and fsynced; rewritten without the dumps that are
	// gone at start and once enough of its lines name such. It keeps a
	// restart from queueing them again.
	LedgerName = ".edr-upload.sent"
	// MaxJournalSize bounds what is read of either file: a larger one is
	// refused (and set aside), never read into memory.
	MaxJournalSize = 16 << 20
	// maxLedgerLine bounds one ledger line.
	maxLedgerLine  = 64 << 10
	journalVersion = 1
)

// entry is one dump in the queue.
type entry struct {
	File          string `json:"file"` // base name in the dump directory
	Size          int64  `json:"size"`
	Key           string `json:"key,omitempty"` // the object key of the last attempt
	QueuedNs      int64  `json:"queued_ns"`
	UploadID      string `json:"upload_id,omitempty"` // multipart upload in progress
	DumpDone      bool   `json:"dump_done,omitempty"` // the dump is confirmed, its Parquet files not yet
	Attempts      int    `json:"attempts,omitempty"`  // failed attempts
	LastError     string `json:"last_error,omitempty"`
	LastAttemptNs int64  `json:"last_attempt_ns,omitempty"`
	NextTryNs     int64  `json:"next_try_ns,omitempty"`
}

type journalDoc struct {
	Version int      `json:"version"`
	Queue   []*entry `json:"queue"`
}

// sentRec is one ledger line.
type sentRec struct {
	File   string `json:"file"`
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c"`
	Key    string `json:"key"`
	AtNs   int64  `json:"at_ns"`
}

// readBounded reads a whole small file, refusing one larger than
// MaxJournalSize. A missing file is (nil, nil).
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxJournalSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxJournalSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes: not read", ErrJournal, path, MaxJournalSize)
	}
	return b, nil
}

// readJournal reads the queue of dir ("no file" is an empty queue).
func readJournal(dir string) ([]*entry, error) {
	p := filepath.Join(dir, JournalName)
	b, err := readBounded(p)
	if err != nil || b == nil {
		return nil, err
	}
	var doc journalDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrJournal, p, err)
	}
	if doc.Version != journalVersion {
		return nil, fmt.Errorf("%w: %s: version %d, want %d", ErrJournal, p, doc.Version, journalVersion)
	}
	for i, e := range doc.Queue {
		if e == nil || e.File == "" || filepath.Base(e.File) != e.File || e.Size < 0 {
			return nil, fmt.Errorf("%w: %s: queue[%d]: bad entry", ErrJournal, p, i)
		}
	}
	return doc.Queue, nil
}

// writeJournal replaces dir's journal with q: NAME.tmp, fsync, rename,
// directory fsync.
func writeJournal(dir string, q []*entry) error {
	doc := journalDoc{Version: journalVersion, Queue: q}
	if doc.Queue == nil {
		doc.Queue = []*entry{}
	}
	b, err := json.MarshalIndent(&doc, "", " ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, JournalName)
	if err := writeDurable(p, append(b, '\n')); err != nil {
		return fmt.Errorf("%w: writing %s: %w", ErrJournal, p, err)
	}
	return nil
}

func writeDurable(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// readLedger reads dir's ledger. Lines that do not parse (a torn last
// line after a power cut) are skipped and counted.
func readLedger(dir string) (map[string]sentRec, int, error) {
	p := filepath.Join(dir, LedgerName)
	b, err := readBounded(p)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]sentRec{}
	bad := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxLedgerLine)
	for sc.Scan() {
		var r sentRec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.File == "" {
			bad++
			continue
		}
		out[r.File] = r
	}
	if sc.Err() != nil {
		bad++
	}
	return out, bad, nil
}

// appendLedger appends r to dir's ledger and fsyncs it.
func appendLedger(dir string, r sentRec) error {
	b, _ := json.Marshal(r)
	p := filepath.Join(dir, LedgerName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrJournal, p, err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: appending to %s: %w", ErrJournal, p, err)
	}
	return nil
}

// writeLedger rewrites dir's ledger with recs (compaction).
func writeLedger(dir string, recs []sentRec) error {
	var buf bytes.Buffer
	for _, r := range recs {
		b, _ := json.Marshal(r)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	p := filepath.Join(dir, LedgerName)
	if err := writeDurable(p, buf.Bytes()); err != nil {
		return fmt.Errorf("%w: writing %s: %w", ErrJournal, p, err)
	}
	return nil
}

// FileState is what the queue's files in a dump directory say of one dump
// (for "edr-lite ls", without a running recorder).
type FileState struct {
	State     string // "queued", "uploading" (a multipart upload started), "failed", "uploaded"
	Key       string
	Attempts  int
	LastError string
}

// ReadState reads the journal and the ledger of dir. ok is false when dir
// has neither (uploads were never configured there).
func ReadState(dir string) (states map[string]FileState, ok bool, err error) {
	q, jerr := readJournal(dir)
	sent, _, lerr := readLedger(dir)
	_, js := os.Stat(filepath.Join(dir, JournalName))
	_, ls := os.Stat(filepath.Join(dir, LedgerName))
	ok = js == nil || ls == nil
	states = map[string]FileState{}
	for name, r := range sent {
		states[name] = FileState{State: "uploaded", Key: r.Key}
	}
	for _, e := range q {
		s := FileState{State: "queued", Key: e.Key, Attempts: e.Attempts, LastError: e.LastError}
		switch {
		case e.LastError != "":
			s.State = "failed"
		case e.UploadID != "" || e.DumpDone:
			s.State = "uploading"
		}
		states[e.File] = s
	}
	return states, ok, errors.Join(jerr, lerr)
}
