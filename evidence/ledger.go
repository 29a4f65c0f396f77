package evidence

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// LedgerName is the chain ledger's file in a dump directory (beside the
// upload queue's journal; no dump extension, so no listing counts it).
const LedgerName = ".edr-chain"

// MaxLedgerSize bounds what is read of a ledger.
const MaxLedgerSize = 16 << 20

// ledgerContext starts the message a ledger's signature signs.
const ledgerContext = "edr-lite chain ledger 1\x00"

// LedgerVersion is the version of the ledger this package writes and reads.
const LedgerVersion = 1

// Entry is one dump of a chain in its ledger: its counter, its seal's ID,
// the name the recorder gave its file, and, once rotation (or an upload's
// delete_after_upload) removed it, why.
type Entry struct {
	Counter uint64 `json:"n"`
	ID      string `json:"id"`
	File    string `json:"file"`
	Rotated string `json:"rotated,omitempty"`
}

// Floor is where a ledger starts: every dump up to Counter was rotated
// away, the last of them with seal ID ID (the next dump's Link.Prev).
type Floor struct {
	Counter uint64 `json:"n"`
	ID      string `json:"id"`
}

// Ledger is a chain's ledger: the chain, its floor, and every dump after
// the floor in counter order, present or rotated. The recorder signs it
// whole at every change (Chain).
type Ledger struct {
	Version int     `json:"version"`
	Chain   string  `json:"chain"`
	Floor   Floor   `json:"floor"`
	Entries []Entry `json:"entries"`

	chain ChainID
	ids   []Digest // Entries' IDs parsed
	floor Digest
}

// ChainID is the ledger's chain.
func (l *Ledger) ChainID() ChainID { return l.chain }

// Head is the ledger's last dump: its counter and seal ID (the floor's
// when it lists none; 0 and zeros for a new chain).
func (l *Ledger) Head() (uint64, Digest) {
	if n := len(l.Entries); n > 0 {
		return l.Entries[n-1].Counter, l.ids[n-1]
	}
	return l.Floor.Counter, l.floor
}

// prevOf is the seal ID of the dump before counter n, and whether the
// ledger knows it.
func (l *Ledger) prevOf(n uint64) (Digest, bool) {
	switch {
	case n == l.Floor.Counter+1:
		return l.floor, true
	case n > l.Floor.Counter+1 && n-l.Floor.Counter-2 < uint64(len(l.Entries)):
		return l.ids[n-l.Floor.Counter-2], true
	}
	return Digest{}, false
}

// entry returns the entry of counter n.
func (l *Ledger) entry(n uint64) (*Entry, bool) {
	if n <= l.Floor.Counter || n-l.Floor.Counter-1 >= uint64(len(l.Entries)) {
		return nil, false
	}
	i := n - l.Floor.Counter - 1
	return &l.Entries[i], true
}

// encode is the ledger's signed line.
func (l *Ledger) encode() []byte {
	l.Version = LedgerVersion
	l.Chain = l.chain.String()
	if l.Entries == nil {
		l.Entries = []Entry{}
	}
	b, _ := json.Marshal(l) // strings and integers only
	return b
}

// Sign returns the ledger's file: the JSON line, then a line
// "ed25519 KEY-ID SIGNATURE" signing it.
func (l *Ledger) Sign(s *Signer) []byte {
	body := l.encode()
	sig := s.sign(append([]byte(ledgerContext), body...))
	out := append(body, '\n')
	out = append(out, "ed25519 "+s.ID().String()+" "+hex.EncodeToString(sig[:])+"\n"...)
	return out
}

// SignedLedger is a ledger as read from its file, with the key that
// signed it and whether that signature verified (against the keys given).
type SignedLedger struct {
	*Ledger
	Key      KeyID
	Verified bool
}

// ParseLedger reads a ledger file and checks its signature against keys
// (none: Verified false). It checks the ledger's form (one JSON line, one
// signature line; counters contiguous after the floor; IDs and names well
// formed) whatever the keys; a signature that does not verify with a
// key given is an error.
func ParseLedger(data []byte, keys *Keyring) (*SignedLedger, error) {
	if len(data) > MaxLedgerSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrLedger, MaxLedgerSize)
	}
	body, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, fmt.Errorf("%w: no signature line", ErrLedger)
	}
	sigLine, after, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok || len(after) != 0 {
		return nil, fmt.Errorf("%w: want a JSON line and a signature line", ErrLedger)
	}
	f := strings.Fields(string(sigLine))
	if len(f) != 3 || f[0] != "ed25519" {
		return nil, fmt.Errorf("%w: signature line %q: want \"ed25519 KEY-ID SIGNATURE\"", ErrLedger, truncate(string(sigLine)))
	}
	key, err := ParseKeyID(f[1])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLedger, err)
	}
	var sig [SignatureSize]byte
	if err := parseHex(sig[:], f[2]); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrLedger, err)
	}
	var l Ledger
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLedger, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrLedger)
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	sl := &SignedLedger{Ledger: &l, Key: key}
	if !bytes.Equal(l.encode(), body) {
		return nil, fmt.Errorf("%w: not in its one encoding (edited by hand?)", ErrLedger)
	}
	if pub, ok := keys.Lookup(key); ok {
		if !ed25519.Verify(pub, append([]byte(ledgerContext), body...), sig[:]) {
			return nil, fmt.Errorf("%w: the signature does not verify with key %s: the ledger was changed", ErrLedger, key)
		}
		sl.Verified = true
	}
	return sl, nil
}

// check validates a decoded ledger and parses its IDs.
func (l *Ledger) check() error {
	if l.Version != LedgerVersion {
		return fmt.Errorf("%w: version %d, this reader knows %d", ErrLedger, l.Version, LedgerVersion)
	}
	var err error
	if l.chain, err = ParseChainID(l.Chain); err != nil || l.chain.IsZero() {
		return fmt.Errorf("%w: chain %q", ErrLedger, truncate(l.Chain))
	}
	if l.Floor.Counter == 0 {
		if l.Floor.ID != "" {
			return fmt.Errorf("%w: a floor ID without a floor", ErrLedger)
		}
	} else if l.floor, err = ParseDigest(l.Floor.ID); err != nil {
		return fmt.Errorf("%w: floor: %v", ErrLedger, err)
	}
	l.ids = make([]Digest, len(l.Entries))
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.Counter != l.Floor.Counter+uint64(i)+1 {
			return fmt.Errorf("%w: entry %d has counter %d, want %d", ErrLedger, i, e.Counter, l.Floor.Counter+uint64(i)+1)
		}
		if l.ids[i], err = ParseDigest(e.ID); err != nil {
			return fmt.Errorf("%w: entry %d: %v", ErrLedger, i, err)
		}
		if e.File == "" || filepath.Base(e.File) != e.File || e.File == "." || e.File == ".." {
			return fmt.Errorf("%w: entry %d: file %q is not a name in the directory", ErrLedger, i, truncate(e.File))
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// ReadLedger reads dir's ledger (nil, nil when it has none).
func ReadLedger(dir string, keys *Keyring) (*SignedLedger, error) {
	p := filepath.Join(dir, LedgerName)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxLedgerSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	l, err := ParseLedger(data, keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}
