package evidence

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
)

// chainFixture is a directory of n dumps of one chain: their names and
// valid verdicts, and the ledger, as the recorder leaves them.
func chainFixture(t *testing.T, n int) (*Signer, *Keyring, *Chain, []DirDump) {
	t.Helper()
	dir := t.TempDir()
	s, _ := GenerateSigner(rand.Reader)
	keys := &Keyring{}
	keys.Add(s.Public())
	c, _, err := OpenChain(dir, s, nil, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	var dumps []DirDump
	for i := range n {
		name := fmt.Sprintf("2026120%dT10%02d00Z_brake_%d.pack", 1+i/60, i%60, i)
		sl := NewSealer(s, FormatPack, c.Next())
		sl.Write([]byte(name))
		seal, _ := sl.Finish(0)
		if err := c.Append(seal, name); err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, DirDump{Name: name, Verdict: Verdict{Status: Valid, Seal: &seal}})
	}
	return s, keys, c, dumps
}

func ledgerOf(t *testing.T, c *Chain, keys *Keyring) *SignedLedger {
	t.Helper()
	l, err := ReadLedger(c.dir, keys)
	if err != nil || !l.Verified {
		t.Fatal(err)
	}
	return l
}

func kinds(r *ChainReport) string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s #%d %s", f.Kind, f.Counter, f.File))
	}
	return strings.Join(out, "; ")
}

// TestCheckChain: a deleted, a replaced, a reordered (swapped) and an
// injected dump in a directory of 20 are each reported, naming the gap;
// rotation alone reports nothing; without the ledger the dumps' own links
// still show a gap and a replacement.
func TestCheckChain(t *testing.T) {
	s, keys, c, dumps := chainFixture(t, 20)
	if r := CheckChain(ledgerOf(t, c, keys), dumps); !r.OK() || r.Present != 20 || r.Head != 20 {
		t.Fatalf("intact: %s %+v", kinds(r), r)
	}
	// Rotation of the 5 oldest and of #9.
	for _, i := range []int{0, 1, 2, 3, 4, 8} {
		if err := c.Rotated(dumps[i].Name, "max_files"); err != nil {
			t.Fatal(err)
		}
	}
	rest := append(append([]DirDump(nil), dumps[5:8]...), dumps[9:]...)
	if r := CheckChain(ledgerOf(t, c, keys), rest); !r.OK() || r.Rotated != 6 || r.Present != 14 {
		t.Fatalf("rotated: %s %+v", kinds(r), r)
	}

	cases := map[string]struct {
		edit func([]DirDump) []DirDump
		want string
	}{
		"deleted": {func(d []DirDump) []DirDump { return append(d[:3:3], d[4:]...) }, "missing #10 "},
		"replaced": {func(d []DirDump) []DirDump {
			other, _ := GenerateSigner(rand.Reader)
			sl := NewSealer(other, FormatPack, Link{})
			seal, _ := sl.Finish(0)
			d[5].Verdict = Verdict{Status: UnknownKey, Seal: &seal, Reason: "x"}
			return d
		}, "replaced #12 "},
		"reordered": {func(d []DirDump) []DirDump {
			d[6].Name, d[7].Name = d[7].Name, d[6].Name
			return d
		}, "reordered #13 "},
		"injected": {func(d []DirDump) []DirDump {
			sl := NewSealer(s, FormatPack, Link{Chain: ChainID{9}, Counter: 4})
			seal, _ := sl.Finish(0)
			return append(d, DirDump{Name: "20261202T000000Z_x_1.pack", Verdict: Verdict{Status: Valid, Seal: &seal}})
		}, "injected #0 20261202T000000Z_x_1.pack"},
	}
	for name, tc := range cases {
		d := tc.edit(append([]DirDump(nil), rest...))
		r := CheckChain(ledgerOf(t, c, keys), d)
		if got := kinds(r); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s, want %q", name, got, tc.want)
		}
		if name == "deleted" && !strings.Contains(r.Findings[0].Text, "after #9 ") || name == "deleted" && !strings.Contains(r.Findings[0].Text, "before #11 ") {
			t.Errorf("deleted: %s does not name the gap", r.Findings[0].Text)
		}
		t.Logf("%s: %s", name, r.Findings[0].Text)
	}

	// Without a ledger: a gap and a replacement show; rotation cannot be told.
	d := append(append([]DirDump(nil), dumps[:3]...), dumps[4:]...)
	r := CheckChain(nil, d)
	if got := kinds(r); !strings.Contains(got, "ledger #0") || !strings.Contains(got, "missing #4") {
		t.Fatalf("no ledger: %s", got)
	}
}

// TestChainAppendRotating: the dumps rotation will remove after a new one
// are recorded with it in one ledger write (Rotated then writes nothing),
// and a rotated dump still present (its removal failed, or the new dump
// failed after the ledger was written) is accounted, with a note, above
// or below the ledger's floor, never reported injected.
func TestChainAppendRotating(t *testing.T) {
	s, keys, c, dumps := chainFixture(t, 4)
	sl := NewSealer(s, FormatPack, c.Next())
	sl.Write([]byte("new"))
	seal, _ := sl.Finish(0)
	name := "20261203T000000Z_brake_5.pack"
	if err := c.Append(seal, name, Removal{dumps[0].Name, "max_files"}, Removal{dumps[2].Name, "max_total_bytes"}, Removal{"not-in-chain.pack", "max_files"}); err != nil {
		t.Fatal(err)
	}
	l := ledgerOf(t, c, keys)
	if l.Floor.Counter != 1 || len(l.Entries) != 4 || l.Entries[1].Rotated != "max_total_bytes" || l.Entries[3].File != name {
		t.Fatalf("ledger: %+v", l.Ledger)
	}
	ledger := c.dir + "/" + LedgerName
	before, err := os.Stat(ledger)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if err := c.Rotated(dumps[i].Name, "max_files"); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := os.Stat(ledger); err != nil || !os.SameFile(before, after) {
		t.Fatalf("Rotated rewrote the ledger for dumps already recorded rotated (%v)", err)
	}
	all := append(dumps, DirDump{Name: name, Verdict: Verdict{Status: Valid, Seal: &seal}})
	r := CheckChain(ledgerOf(t, c, keys), all)
	if !r.OK() || r.Present != 3 || r.Rotated != 2 || len(r.Notes) != 2 {
		t.Fatalf("both rotated dumps still here: %s %+v", kinds(r), r)
	}
	for _, n := range r.Notes {
		if !strings.Contains(n, "is listed as rotated and is still here") {
			t.Errorf("note %q", n)
		}
	}
	rest := append([]DirDump{all[1]}, all[3:]...)
	if r := CheckChain(ledgerOf(t, c, keys), rest); !r.OK() || len(r.Notes) != 0 || r.Present != 3 {
		t.Fatalf("rotated dumps gone: %s %+v", kinds(r), r)
	}
}
