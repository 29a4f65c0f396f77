package evidence

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Chain is a recorder's chain in one dump directory: it hands each new
// dump its Link (Next), records the dump once it is sealed (Append) and
// a dump rotation removes (Rotated), keeping the ledger (LedgerName)
// signed and durable at every change. Safe for concurrent use.
type Chain struct {
	dir    string
	signer *Signer
	mode   os.FileMode

	mu sync.Mutex
	l  *Ledger
}

// OpenChain opens the chain of dir, signing with s; files it writes get
// mode. A directory without a ledger starts a new chain. A ledger signed
// by s's key, or by one of the earlier keys in previous (the signing key
// was replaced: the chain goes on under s), is continued. Any other (it
// does not verify: changed, or signed by a key nobody vouched for) is
// kept aside as LedgerName+".bad" and a new chain starts: the recorder
// never re-signs a ledger it cannot trust. notes say what happened, for
// the log and status.
func OpenChain(dir string, s *Signer, previous *Keyring, mode os.FileMode) (c *Chain, notes []string, err error) {
	c = &Chain{dir: dir, signer: s, mode: mode}
	keys := &Keyring{}
	keys.Add(s.Public())
	for _, id := range previous.IDs() {
		pub, _ := previous.Lookup(id)
		keys.Add(pub)
	}
	sl, err := ReadLedger(dir, keys)
	if err == nil && sl != nil && !sl.Verified {
		err = fmt.Errorf("%w: signed by key %s, neither the signing key %s nor an earlier key given", ErrLedger, sl.Key, s.ID())
	}
	switch {
	case err != nil && errors.Is(err, ErrLedger):
		aside := filepath.Join(dir, LedgerName+".bad")
		if rerr := os.Rename(filepath.Join(dir, LedgerName), aside); rerr != nil {
			return nil, nil, fmt.Errorf("%w (and moving it aside: %v)", err, rerr)
		}
		notes = append(notes, fmt.Sprintf("chain ledger %s: %v: moved to %s; a new chain starts, and verify --chain reports the dumps of the old one", filepath.Join(dir, LedgerName), err, aside))
	case err != nil:
		return nil, nil, err
	case sl != nil:
		c.l = sl.Ledger
		if sl.Key != s.ID() {
			notes = append(notes, fmt.Sprintf("the chain ledger of %s was signed by the earlier key %s: the chain goes on under %s", dir, sl.Key, s.ID()))
		}
	}
	if c.l == nil {
		var id ChainID
		if _, err := rand.Read(id[:]); err != nil {
			return nil, nil, err
		}
		c.l = &Ledger{chain: id}
		if err := c.saveLocked(); err != nil {
			return nil, notes, err
		}
	}
	return c, notes, nil
}

// ID is the chain's ID.
func (c *Chain) ID() ChainID { return c.l.chain }

// Signer is the key the chain's dumps and ledger are signed with.
func (c *Chain) Signer() *Signer { return c.signer }

// Next is the link of the next dump: the counter after the last one
// recorded, and that dump's seal ID. A dump that is never appended (it
// failed) leaves its counter to the next.
func (c *Chain) Next() Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, id := c.l.Head()
	return Link{Chain: c.l.chain, Counter: n + 1, Prev: id}
}

// Append records the sealed dump file (a base name in the directory),
// which must carry the link Next gave, and saves the ledger. The
// recorder calls it before it renames the file into place, so a ledger
// never lacks a dump that is in the directory.
//
// rotating are the dumps the rotation after this dump will remove: they
// are recorded as Rotated records them, in the same save (one durable
// write per dump instead of two; Rotated then finds them recorded and
// writes nothing). Should one stay (the new dump fails after this, or its
// removal does), the ledger lists it as rotated while it is present,
// which verify --chain accepts as an interrupted removal.
func (c *Chain) Append(s Seal, file string, rotating ...Removal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, id := c.l.Head()
	if s.Link.Chain != c.l.chain || s.Link.Counter != n+1 || s.Link.Prev != id {
		return fmt.Errorf("BUG: evidence: appending %s #%d (after %s) to chain %s at #%d", file, s.Link.Counter, s.Link.Prev, c.l.chain, n)
	}
	sid := s.ID()
	c.l.Entries = append(c.l.Entries, Entry{Counter: s.Link.Counter, ID: sid.String(), File: file})
	c.l.ids = append(c.l.ids, sid)
	for _, r := range rotating {
		if r.File != file {
			c.markLocked(r.File, r.Reason)
		}
	}
	c.floorLocked()
	return c.saveLocked()
}

// Removal is a dump file (a base name in the directory) about to be
// removed, and why (rotation's bound, "delete_after_upload").
type Removal struct {
	File, Reason string
}

// Adopt appends a leftover (a dump interrupted between its seal and its
// rename, found at start as file) when it is the chain's next dump; it
// reports whether it was.
func (c *Chain) Adopt(s Seal, file string) (bool, error) {
	c.mu.Lock()
	n, id := c.l.Head()
	next := s.Link.Chain == c.l.chain && s.Link.Counter == n+1 && s.Link.Prev == id
	c.mu.Unlock()
	if !next {
		return false, nil
	}
	return true, c.Append(s, file)
}

// Rotated records that the dump file is being removed for reason
// (rotation's bound, "delete_after_upload"), before it is: the ledger
// then tells a rotated dump from a deleted one. A file not in the chain
// (written before signing was on, or not a dump of this recorder) is no
// error.
func (c *Chain) Rotated(file, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.markLocked(file, reason) {
		return nil
	}
	c.floorLocked()
	return c.saveLocked()
}

// markLocked records the chain's dump file as rotated for reason; false
// when no entry of the chain not yet rotated names it.
func (c *Chain) markLocked(file, reason string) bool {
	i := -1
	for k := range c.l.Entries {
		if e := &c.l.Entries[k]; e.File == file && e.Rotated == "" {
			i = k
		}
	}
	if i < 0 {
		return false
	}
	if reason == "" {
		reason = "rotated"
	}
	c.l.Entries[i].Rotated = reason
	return true
}

// floorLocked moves the dumps rotated from the start of the list below
// the floor.
func (c *Chain) floorLocked() {
	k := 0
	for k < len(c.l.Entries) && c.l.Entries[k].Rotated != "" {
		k++
	}
	if k > 0 {
		c.l.Floor = Floor{Counter: c.l.Entries[k-1].Counter, ID: c.l.Entries[k-1].ID}
		c.l.floor = c.l.ids[k-1]
		c.l.Entries = append(c.l.Entries[:0], c.l.Entries[k:]...)
		c.l.ids = append(c.l.ids[:0], c.l.ids[k:]...)
	}
}

// Len is the number of dumps the ledger lists (present or rotated above
// its floor).
func (c *Chain) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.l.Entries)
}

func (c *Chain) saveLocked() error {
	p := filepath.Join(c.dir, LedgerName)
	if err := writeDurable(p, c.l.Sign(c.signer), c.mode); err != nil {
		return fmt.Errorf("writing the chain ledger %s: %w", p, err)
	}
	return nil
}

// writeDurable replaces path with b through path.tmp (given mode), fsync,
// rename and a directory fsync.
func writeDurable(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	err = f.Chmod(mode)
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
		var d *os.File
		if d, err = os.Open(filepath.Dir(path)); err == nil {
			err = errors.Join(d.Sync(), d.Close())
		}
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
