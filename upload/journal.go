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
	"sort"
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
	LastErrorKind string `json:"last_error_kind,omitempty"` // KindOf(the last error)
	LastAttemptNs int64  `json:"last_attempt_ns,omitempty"`
	NextTryNs     int64  `json:"next_try_ns,omitempty"`

	sums sumCache // the file's CRC32Cs, kept across attempts (not journaled)
}

type journalDoc struct {
	Version int      `json:"version"`
	Queue   []*entry `json:"queue"`
}

// sentRec is one ledger line.
type sentRec struct {
	File   string    `json:"file"`
	Size   int64     `json:"size"`
	CRC32C string    `json:"crc32c"`
	Key    string    `json:"key"`
	AtNs   int64     `json:"at_ns"`
	Seal   *SealInfo `json:"seal,omitempty"` // Options.Seal's; absent in older ledgers
}

// SealInfo is what the ledger records of a dump's signature
// (docs/evidence.md): the key that signed it, whether the seal held when
// the dump was uploaded, and its place in the dump directory's chain, so
// a fleet sees an unsigned dump, a changed one, or a gap in a vehicle's
// chain from its ledgers (and the Parquet dumps table) alone.
type SealInfo struct {
	Status  string `json:"status"` // "valid", "invalid", "unsigned", "unknown key", "not checked"
	KeyID   string `json:"key_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Chain   string `json:"chain,omitempty"`
	Counter uint64 `json:"counter,omitempty"`
	Seal    string `json:"seal,omitempty"` // the seal's ID (the next dump's previous)
	Prev    string `json:"prev,omitempty"`
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
func writeJournal(dir string, q []*entry, mode os.FileMode) error {
	doc := journalDoc{Version: journalVersion, Queue: q}
	if doc.Queue == nil {
		doc.Queue = []*entry{}
	}
	b, err := json.MarshalIndent(&doc, "", " ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, JournalName)
	if err := writeDurable(p, append(b, '\n'), mode); err != nil {
		return fmt.Errorf("%w: writing %s: %w", ErrJournal, p, err)
	}
	return nil
}

// writeDurable replaces path with b through path.tmp (given mode, whatever
// the umask), fsync, rename and a directory fsync.
func writeDurable(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	err = f.Chmod(mode) // an old .tmp keeps its mode, the umask clears bits
	if err == nil {
		_, err = f.Write(b)
	}
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

// ledgerDamage is what readLedger found wrong in the ledger.
type ledgerDamage struct {
	Bad       int  // lines that are no ledger record
	FirstLine int  // the first of them (from 1)
	Torn      bool // the only bad line is the last, unterminated: a power cut while it was appended
}

// readLedger reads dir's ledger. Lines that do not parse are skipped and
// counted: one last line without its newline is a line torn by a power
// cut while it was appended; anything else is garbage.
func readLedger(dir string) (map[string]sentRec, ledgerDamage, error) {
	var dmg ledgerDamage
	p := filepath.Join(dir, LedgerName)
	b, err := readBounded(p)
	if err != nil {
		return nil, dmg, err
	}
	out := map[string]sentRec{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxLedgerLine)
	line, lastBad := 0, 0
	for sc.Scan() {
		line++
		var r sentRec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.File == "" || filepath.Base(r.File) != r.File {
			dmg.Bad++
			lastBad = line
			if dmg.FirstLine == 0 {
				dmg.FirstLine = line
			}
			continue
		}
		out[r.File] = r
	}
	if sc.Err() != nil { // a line longer than maxLedgerLine: the rest is not read
		dmg.Bad++
		if dmg.FirstLine == 0 {
			dmg.FirstLine = line + 1
		}
		lastBad = -1
	}
	dmg.Torn = dmg.Bad == 1 && lastBad == line && len(b) > 0 && b[len(b)-1] != '\n'
	return out, dmg, nil
}

// setAside moves dir's file name out of the way as NAME.bad.N, N the
// first number not taken: an earlier damaged file is never overwritten.
func setAside(dir, name string) (string, error) {
	src := filepath.Join(dir, name)
	for n := 1; n <= maxSetAside; n++ {
		dst := fmt.Sprintf("%s%s%d", src, badInfix, n)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		// a hard link never replaces dst (a rename would): then the
		// original name goes
		if err := os.Link(src, dst); err != nil {
			if errors.Is(err, os.ErrExist) {
				continue
			}
			if err := os.Rename(src, dst); err != nil {
				return "", err
			}
			return dst, syncDir(dir)
		}
		if err := os.Remove(src); err != nil {
			return dst, err
		}
		return dst, syncDir(dir)
	}
	return "", fmt.Errorf("%w: %s: %d damaged copies set aside already; remove them", ErrJournal, src, maxSetAside)
}

// badInfix is what names a set-aside file: NAME.bad.N (NAME.bad before
// the files were numbered).
const badInfix = ".bad."

// maxSetAside bounds how many set-aside copies of one file are kept.
const maxSetAside = 1000

// setAsideFiles lists the set-aside copies of the queue's files in dir.
func setAsideFiles(dir string) []string {
	var out []string
	for _, n := range []string{JournalName, LedgerName} {
		m, _ := filepath.Glob(filepath.Join(dir, n+".bad*"))
		for _, p := range m {
			out = append(out, filepath.Base(p))
		}
	}
	sort.Strings(out)
	return out
}

// appendLedger appends r to dir's ledger (created with mode) and fsyncs
// it.
func appendLedger(dir string, r sentRec, mode os.FileMode) error {
	b, _ := json.Marshal(r)
	p := filepath.Join(dir, LedgerName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, mode)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrJournal, p, err)
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
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
func writeLedger(dir string, recs []sentRec, mode os.FileMode) error {
	var buf bytes.Buffer
	for _, r := range recs {
		b, _ := json.Marshal(r)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	p := filepath.Join(dir, LedgerName)
	if err := writeDurable(p, buf.Bytes(), mode); err != nil {
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
	Seal      *SealInfo // an uploaded dump's signature as the ledger records it
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
		states[name] = FileState{State: "uploaded", Key: r.Key, Seal: r.Seal}
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
