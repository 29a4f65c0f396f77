package evidence

import (
	"fmt"
	"sort"
	"strings"
)

// DirDump is a dump file of a directory, its seal judged: what
// CheckChain is given for every dump file there (leftovers too).
type DirDump struct {
	Name    string // base name
	Verdict Verdict
}

// Kinds of ChainFinding.
const (
	// FindMissing: a dump of the chain is gone and the ledger does not
	// say rotation removed it (deleted).
	FindMissing = "missing"
	// FindReplaced: the file by a chain dump's name is not that dump.
	FindReplaced = "replaced"
	// FindReordered: a chain dump is in the directory under another
	// name than the recorder gave it (moved, swapped).
	FindReordered = "reordered"
	// FindInjected: a dump file that is not in the chain.
	FindInjected = "injected"
	// FindUnlinked: a dump that does not follow the one before it.
	FindUnlinked = "unlinked"
	// FindLedger: the ledger itself cannot be trusted or is missing.
	FindLedger = "ledger"
)

// ChainFinding is one thing verify --chain reports.
type ChainFinding struct {
	Kind    string
	File    string // the file concerned ("" for a ledger finding)
	Counter uint64 // its place in the chain (0: none)
	Text    string
}

// ChainReport is what CheckChain found.
type ChainReport struct {
	Chain ChainID
	// Ledger: the directory's ledger was read and verified, LedgerKey
	// signed it.
	Ledger    bool
	LedgerKey KeyID
	// First and Head are the chain's first counter held (above the
	// floor) and its last; Present the dumps found in place, Rotated
	// those the ledger lists as rotated (Floor of them below the
	// floor).
	First, Head uint64
	Present     int
	Rotated     uint64
	Findings    []ChainFinding
	Notes       []string
}

// OK reports whether nothing was found wrong.
func (r *ChainReport) OK() bool { return len(r.Findings) == 0 }

// CheckChain checks the dumps of a directory against its chain ledger
// (nil: the directory has none, or it did not verify; then the dumps'
// own links are all there is). Every dump given is accounted: in its
// place in the chain, or a finding.
func CheckChain(l *SignedLedger, dumps []DirDump) *ChainReport {
	c := &chainCheck{byName: map[string]*DirDump{}, byID: map[Digest]*DirDump{}, used: map[string]bool{}}
	for i := range dumps {
		d := &dumps[i]
		c.byName[d.Name] = d
	}
	if l != nil && l.Verified {
		c.withLedger(l, dumps)
	} else {
		c.withoutLedger(l, dumps)
	}
	for i := range dumps {
		d := &dumps[i]
		if !c.used[d.Name] {
			c.injected(d)
		}
	}
	sort.SliceStable(c.r.Findings, func(i, j int) bool {
		a, b := c.r.Findings[i], c.r.Findings[j]
		if a.Counter != b.Counter {
			return a.Counter < b.Counter
		}
		return a.File < b.File
	})
	return &c.r
}

type chainCheck struct {
	r      ChainReport
	byName map[string]*DirDump
	byID   map[Digest]*DirDump // valid seals of the chain
	used   map[string]bool
	ledger *Ledger
}

func (c *chainCheck) find(kind, file string, n uint64, format string, a ...any) {
	c.r.Findings = append(c.r.Findings, ChainFinding{Kind: kind, File: file, Counter: n, Text: fmt.Sprintf(format, a...)})
}

// inChain reports whether d is a dump of the chain with a seal that
// holds (valid, or its digest matching when no key could check it:
// CheckChain's caller decides what counts).
func (c *chainCheck) inChain(d *DirDump) bool {
	s := d.Verdict.Seal
	return s != nil && d.Verdict.Status == Valid && s.Link.Chain == c.r.Chain
}

// at finds the file of entry e: by its name, or as the leftover an
// interrupted rename left.
func (c *chainCheck) at(name string) *DirDump {
	for _, n := range []string{name, name + ".interrupted", name + ".tmp"} {
		if d, ok := c.byName[n]; ok {
			return d
		}
	}
	return nil
}

func (c *chainCheck) withLedger(l *SignedLedger, dumps []DirDump) {
	c.ledger = l.Ledger
	c.r.Chain, c.r.Ledger, c.r.LedgerKey = l.chain, true, l.Key
	c.r.Rotated = l.Floor.Counter
	c.r.First = l.Floor.Counter + 1
	c.r.Head, _ = l.Head()
	for i := range dumps {
		if d := &dumps[i]; c.inChain(d) {
			c.byID[d.Verdict.Seal.ID()] = d
		}
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		id := l.ids[i]
		d := c.at(e.File)
		if e.Rotated != "" {
			c.r.Rotated++
			if d != nil && c.inChain(d) && d.Verdict.Seal.ID() == id {
				c.stillHere(d, e.Counter)
			}
			continue
		}
		switch {
		case d != nil && c.inChain(d) && d.Verdict.Seal.ID() == id:
			c.used[d.Name] = true
			c.r.Present++
			if d.Name != e.File {
				c.r.Notes = append(c.r.Notes, fmt.Sprintf("dump #%d %s is the leftover %s (interrupted before its rename)", e.Counter, e.File, d.Name))
			}
			c.link(d, e.Counter)
		case d != nil:
			c.used[d.Name] = true
			if m, ok := c.counterOf(d); ok {
				c.find(FindReordered, d.Name, e.Counter, "%s holds dump #%d (recorded as %s), not #%d", d.Name, m.Counter, m.File, e.Counter)
			} else {
				c.find(FindReplaced, d.Name, e.Counter, "%s is not dump #%d of the chain: %s", d.Name, e.Counter, c.why(d))
			}
		default:
			if o, ok := c.byID[id]; ok {
				c.used[o.Name] = true
				c.r.Present++
				c.find(FindReordered, o.Name, e.Counter, "dump #%d %s is now named %s", e.Counter, e.File, o.Name)
				continue
			}
			c.find(FindMissing, e.File, e.Counter, "dump #%d %s is gone (%s), and the ledger does not list it as rotated: deleted", e.Counter, e.File, c.between(e.Counter))
		}
	}
	// Below the floor: rotated dumps the ledger no longer lists one by
	// one. A dump of the chain there was rotated and is still here.
	for i := range dumps {
		if d := &dumps[i]; !c.used[d.Name] && c.inChain(d) && d.Verdict.Seal.Link.Counter <= l.Floor.Counter {
			c.stillHere(d, d.Verdict.Seal.Link.Counter)
		}
	}
}

// stillHere accounts the chain dump d, #n, which the ledger lists as
// rotated: its removal failed or was interrupted (the recorder records a
// rotation before it removes the file), or it was put back.
func (c *chainCheck) stillHere(d *DirDump, n uint64) {
	c.used[d.Name] = true
	c.r.Notes = append(c.r.Notes, fmt.Sprintf("dump #%d %s is listed as rotated and is still here (its removal failed or was interrupted, or it was put back)", n, d.Name))
}

// counterOf returns the ledger entry of the chain dump d, when d is one.
func (c *chainCheck) counterOf(d *DirDump) (*Entry, bool) {
	if !c.inChain(d) || c.ledger == nil {
		return nil, false
	}
	e, ok := c.ledger.entry(d.Verdict.Seal.Link.Counter)
	if !ok || e.ID != d.Verdict.Seal.ID().String() {
		return nil, false
	}
	return e, true
}

// link checks that d (counter n) follows the dump before it.
func (c *chainCheck) link(d *DirDump, n uint64) {
	prev, ok := c.ledger.prevOf(n)
	if ok && d.Verdict.Seal.Link.Prev != prev {
		c.find(FindUnlinked, d.Name, n, "%s (#%d) records %s as the dump before it; the ledger has %s", d.Name, n, short(d.Verdict.Seal.Link.Prev), short(prev))
	}
}

// between names the neighbours of counter n in the ledger.
func (c *chainCheck) between(n uint64) string {
	l := c.ledger
	var parts []string
	if e, ok := l.entry(n - 1); ok && e.Rotated != "" {
		parts = append(parts, fmt.Sprintf("after #%d %s, rotated", e.Counter, e.File))
	} else if ok {
		parts = append(parts, fmt.Sprintf("after #%d %s", e.Counter, e.File))
	} else if n-1 == l.Floor.Counter && n > 1 {
		parts = append(parts, fmt.Sprintf("after #%d, rotated", n-1))
	} else if n == 1 {
		parts = append(parts, "the chain's first")
	}
	if e, ok := l.entry(n + 1); ok {
		parts = append(parts, fmt.Sprintf("before #%d %s", e.Counter, e.File))
	} else {
		parts = append(parts, "the chain's last")
	}
	return strings.Join(parts, ", ")
}

// why says what d is, when it is not the chain dump it should be.
func (c *chainCheck) why(d *DirDump) string {
	v := d.Verdict
	switch {
	case v.Seal == nil:
		return "it is unsigned"
	case v.Status != Valid:
		return "its seal: " + v.Summary()
	case v.Seal.Link.Chain != c.r.Chain:
		if v.Seal.Link.Chain.IsZero() {
			return fmt.Sprintf("a dump signed by %s in no chain (an operator's cut?)", v.Seal.Key)
		}
		return fmt.Sprintf("a dump of another chain (%s #%d: another recorder or directory)", v.Seal.Link.Chain, v.Seal.Link.Counter)
	}
	return fmt.Sprintf("a dump that claims #%d of this chain with seal %s, which the chain does not hold", v.Seal.Link.Counter, short(v.Seal.ID()))
}

// injected reports a dump file not accounted in the chain.
func (c *chainCheck) injected(d *DirDump) {
	var n uint64
	if s := d.Verdict.Seal; s != nil && s.Link.Chain == c.r.Chain {
		n = s.Link.Counter
	}
	why := c.why(d)
	if c.inChain(d) && c.r.Ledger && n > c.r.Head {
		why = fmt.Sprintf("it claims #%d, after the ledger's last #%d (the ledger was rolled back, or the dump made with the key)", n, c.r.Head)
	}
	c.find(FindInjected, d.Name, n, "%s is not in the chain: %s", d.Name, why)
}

// WithoutLedger is what a chain check cannot tell without a ledger it can
// trust (none, or one that does not read or verify).
const WithoutLedger = "a rotated dump cannot be told from a deleted one, and the newest dumps' deletion cannot be seen"

func (c *chainCheck) withoutLedger(l *SignedLedger, dumps []DirDump) {
	if l == nil {
		c.find(FindLedger, LedgerName, 0, "no chain ledger: %s", WithoutLedger)
	} else {
		c.find(FindLedger, LedgerName, 0, "the chain ledger is signed by key %s, which is not among the keys given: it was not used", l.Key)
	}
	// The chain is the one most valid dumps belong to.
	count := map[ChainID]int{}
	for i := range dumps {
		if s := dumps[i].Verdict.Seal; s != nil && dumps[i].Verdict.Status == Valid && !s.Link.Chain.IsZero() {
			count[s.Link.Chain]++
		}
	}
	best := -1
	for id, n := range count {
		if n > best || n == best && id.String() < c.r.Chain.String() {
			c.r.Chain, best = id, n
		}
	}
	var in []*DirDump
	for i := range dumps {
		if d := &dumps[i]; c.inChain(d) {
			in = append(in, d)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].Verdict.Seal.Link.Counter < in[j].Verdict.Seal.Link.Counter })
	for i, d := range in {
		s := d.Verdict.Seal
		c.used[d.Name] = true
		c.r.Present++
		if i == 0 {
			c.r.First = s.Link.Counter
			if s.Link.Counter > 1 {
				c.r.Notes = append(c.r.Notes, fmt.Sprintf("the chain's dumps #1-#%d are not here (rotated or deleted: no ledger to tell)", s.Link.Counter-1))
			}
			continue
		}
		p := in[i-1]
		ps := p.Verdict.Seal
		switch {
		case s.Link.Counter == ps.Link.Counter:
			c.find(FindReplaced, d.Name, s.Link.Counter, "%s and %s both claim #%d: one is not the chain's", p.Name, d.Name, s.Link.Counter)
		case s.Link.Counter > ps.Link.Counter+1:
			c.find(FindMissing, "", ps.Link.Counter+1, "dumps #%d-#%d are gone (after #%d %s, before #%d %s): deleted or rotated", ps.Link.Counter+1, s.Link.Counter-1, ps.Link.Counter, p.Name, s.Link.Counter, d.Name)
		case s.Link.Prev != ps.ID():
			c.find(FindReplaced, p.Name, ps.Link.Counter, "%s (#%d) is not the dump %s (#%d) follows: one of them was replaced", p.Name, ps.Link.Counter, d.Name, s.Link.Counter)
		}
		c.r.Head = s.Link.Counter
	}
	if len(in) == 1 {
		c.r.Head = in[0].Verdict.Seal.Link.Counter
	}
}

func short(d Digest) string { return d.String()[:16] }
