package evidence

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSealEncodings: binary and map forms round-trip; malformed ones are
// refused; Judge gives each status.
func TestSealEncodings(t *testing.T) {
	s, err := GenerateSigner(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []Link{{}, {Chain: ChainID{3}, Counter: 9, Prev: Digest{4}}} {
		sl := NewSealer(s, FormatMCAP, link)
		sl.Write([]byte("0123456789"))
		seal, _ := sl.Finish(4)
		b := seal.AppendBinary(nil)
		if len(b) != SealSize {
			t.Fatalf("binary seal of %d bytes", len(b))
		}
		if got, err := ParseSeal(b); err != nil || got != seal {
			t.Fatalf("binary round trip: %v %+v", err, got)
		}
		if got, err := ParseMap(seal.Map()); err != nil || got != seal {
			t.Fatalf("map round trip: %v %+v", err, got)
		}
		m := seal.Map()
		m[kLength] = "10"
		if _, err := ParseMap(m); !errors.Is(err, ErrMalformed) {
			t.Fatalf("short length: %v", err)
		}
		keys := &Keyring{}
		if v := Judge(Found{Seal: &seal, Digest: seal.Digest, Hashed: 10}, keys); v.Status != NotChecked {
			t.Fatal(v.Summary())
		}
		keys.Add(s.Public())
		if v := Judge(Found{Seal: &seal, Digest: seal.Digest, Hashed: 10}, keys); !v.OK() {
			t.Fatal(v.Summary())
		}
		bad := seal
		bad.Link.Counter++
		if v := Judge(Found{Seal: &bad, Digest: seal.Digest, Hashed: 10}, keys); v.Status != Invalid || !strings.Contains(v.Reason, "signature") {
			t.Fatal(v.Summary())
		}
		if v := Judge(Found{Seal: &seal, Digest: seal.Digest, Hashed: 11}, keys); v.Status != Invalid || !strings.Contains(v.Reason, "longer") {
			t.Fatal(v.Summary())
		}
	}
	if _, err := ParseSeal(make([]byte, SealSize)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("version 0: %v", err)
	}
}

// TestHasherMarkBack: going back to a mark is as if what followed it was
// never written.
func TestHasherMarkBack(t *testing.T) {
	a, b := NewHasher(), NewHasher()
	a.Write([]byte("head"))
	a.Mark()
	a.Write(bytes.Repeat([]byte{1}, 100000))
	if err := a.Back(); err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("tail"))
	b.Write([]byte("headtail"))
	if a.Sum() != b.Sum() || a.Len() != 8 {
		t.Fatalf("after Back: %s (%d bytes), want %s", a.Sum(), a.Len(), b.Sum())
	}
}

// TestChainLedger: a chain survives reopening (counter and previous ID
// continue), rotation moves dumps to the floor, a changed ledger is
// refused and set aside, and a ledger of an earlier key goes on only
// when that key is given.
func TestChainLedger(t *testing.T) {
	dir := t.TempDir()
	s, _ := GenerateSigner(rand.Reader)
	c, notes, err := OpenChain(dir, s, nil, 0o640)
	if err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	var seals []Seal
	add := func(c *Chain, name string) {
		t.Helper()
		sl := NewSealer(s, FormatPack, c.Next())
		sl.Write([]byte(name))
		seal, _ := sl.Finish(0)
		if err := c.Append(seal, name); err != nil {
			t.Fatal(err)
		}
		seals = append(seals, seal)
	}
	add(c, "a.pack")
	add(c, "b.pack")
	c2, _, err := OpenChain(dir, s, nil, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if l := c2.Next(); l.Counter != 3 || l.Prev != seals[1].ID() || l.Chain != c.ID() {
		t.Fatalf("reopened: next %+v", l)
	}
	add(c2, "c.pack")
	if err := c2.Rotated("a.pack", "max_files"); err != nil {
		t.Fatal(err)
	}
	if err := c2.Rotated("c.pack", "max_files"); err != nil {
		t.Fatal(err)
	}
	keys := &Keyring{}
	keys.Add(s.Public())
	l, err := ReadLedger(dir, keys)
	if err != nil || !l.Verified {
		t.Fatal(err)
	}
	if l.Floor.Counter != 1 || len(l.Entries) != 2 || l.Entries[1].Rotated != "max_files" {
		t.Fatalf("ledger after rotation: %+v", l.Ledger)
	}
	// A changed ledger: refused, set aside, a new chain.
	p := filepath.Join(dir, LedgerName)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte(`"max_files"`), []byte(`"max_fileX"`), 1), 0o640)
	if _, err := ReadLedger(dir, keys); !errors.Is(err, ErrLedger) {
		t.Fatalf("changed ledger: %v", err)
	}
	c3, notes, err := OpenChain(dir, s, nil, 0o640)
	if err != nil || len(notes) != 1 || c3.ID() == c.ID() {
		t.Fatalf("changed ledger reopened: %v %v", err, notes)
	}
	if _, err := os.Stat(p + ".bad"); err != nil {
		t.Fatal(err)
	}
	// A new key: the chain goes on only when the old key is given.
	s2, _ := GenerateSigner(rand.Reader)
	old := &Keyring{}
	old.Add(s.Public())
	c4, notes, err := OpenChain(dir, s2, old, 0o640)
	if err != nil || c4.ID() != c3.ID() || len(notes) != 1 {
		t.Fatalf("key rotation: %v %v", err, notes)
	}
	sl := NewSealer(s2, FormatPack, c4.Next())
	seal, _ := sl.Finish(0)
	if err := c4.Append(seal, "d.pack"); err != nil { // signs the ledger under the new key
		t.Fatal(err)
	}
	c5, _, err := OpenChain(dir, s, nil, 0o640) // the old key alone no longer verifies it
	if err != nil || c5.ID() == c3.ID() {
		t.Fatalf("old key after rotation: %v", err)
	}
}
