package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/crypt"
	"github.com/edr-lite/edr-lite/evidence/keyfile"
)

// keysFlag is --key FILE, repeatable: public keys to check signatures with.
type keysFlag []string

func (k *keysFlag) String() string { return strings.Join(*k, ",") }
func (k *keysFlag) Set(v string) error {
	*k = append(*k, v)
	return nil
}

// declareKeyFlag adds --key to c.
func declareKeyFlag(c *command) *keysFlag {
	k := &keysFlag{}
	c.fs.Var(k, "key", "a public key `FILE` to check signatures with (PEM, as \"openssl pkey -pubout\" writes it; a keys file holds several); repeatable")
	return k
}

// load reads the keys (an empty Keyring when none were given).
func (k *keysFlag) load() (*evidence.Keyring, error) {
	if len(*k) == 0 {
		return &evidence.Keyring{}, nil
	}
	return keyfile.LoadKeys(*k...)
}

// signatureText is a verdict as info and verify print it.
func signatureText(v evidence.Verdict) string { return v.Summary() }

// signatureJSON is a verdict in info --json and verify --json.
type signatureJSON struct {
	Status  string `json:"status"` // valid, invalid, unsigned, unknown key, not checked
	KeyID   string `json:"key_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Seal    string `json:"seal,omitempty"` // the seal's ID
	Chain   string `json:"chain,omitempty"`
	Counter uint64 `json:"counter,omitempty"`
	Prev    string `json:"prev,omitempty"`
	// At and Length are where the seal lies and how many bytes its digest
	// covers; Sig the signature (hex): with them an investigator checks
	// the seal with OpenSSL (docs/evidence.md).
	At     int64  `json:"at,omitempty"`
	Length int64  `json:"length,omitempty"`
	Sig    string `json:"sig,omitempty"`
}

func newSignatureJSON(v evidence.Verdict) *signatureJSON {
	j := &signatureJSON{Status: v.Status.String(), Reason: v.Reason}
	if s := v.Seal; s != nil {
		j.KeyID, j.Digest, j.Seal = s.Key.String(), s.Digest.String(), s.ID().String()
		j.At, j.Length, j.Sig = s.At, s.Length, hex.EncodeToString(s.Signature[:])
		if !s.Link.Chain.IsZero() {
			j.Chain, j.Counter = s.Link.Chain.String(), s.Link.Counter
			if !s.Link.Prev.IsZero() {
				j.Prev = s.Link.Prev.String()
			}
		}
	}
	return j
}

// verifyChain checks the chain of the dump directory dir against keys and
// prints what it finds; it returns whether all holds.
func verifyChain(c *command, w io.Writer, dir string, keys *evidence.Keyring) (bool, error) {
	l, err := dump.OpenDir(dir).List()
	if err != nil {
		return false, err
	}
	var dumps []evidence.DirDump
	for _, f := range append(l.Dumps, l.Leftovers...) {
		path := f.Path
		if crypt.IsEncrypted(path) {
			if path, err = c.decryptOne(path); err != nil {
				dumps = append(dumps, evidence.DirDump{Name: f.Name, Verdict: evidence.Verdict{Status: evidence.Invalid, Reason: err.Error()}})
				continue
			}
		}
		v, err := dumpfile.CheckSeal(path, keys)
		if err != nil {
			v = evidence.Verdict{Status: evidence.Invalid, Reason: err.Error()}
		}
		dumps = append(dumps, evidence.DirDump{Name: f.Name, Verdict: v})
	}
	sl, lerr := evidence.ReadLedger(dir, keys)
	rep := evidence.CheckChain(sl, dumps)
	if lerr != nil { // there is a ledger, not none: CheckChain's "no chain ledger" finding says this instead
		for i := range rep.Findings {
			if f := &rep.Findings[i]; f.Kind == evidence.FindLedger && f.File == evidence.LedgerName && f.Counter == 0 {
				f.Text = fmt.Sprintf("the chain ledger cannot be trusted (%v): %s", lerr, evidence.WithoutLedger)
			}
		}
	}
	chain := "no chain"
	if !rep.Chain.IsZero() {
		chain = "chain " + rep.Chain.String()
	}
	head := fmt.Sprintf("%s: %s: %d dumps in place", dir, chain, rep.Present)
	if rep.Head > 0 {
		head += fmt.Sprintf(", #%d-#%d", rep.First, rep.Head)
	}
	if rep.Ledger {
		head += fmt.Sprintf(", %d rotated; ledger signed by %s", rep.Rotated, rep.LedgerKey)
	}
	if rep.OK() {
		fmt.Fprintf(w, "%s: ok\n", head)
	} else {
		fmt.Fprintf(w, "%s: %d problem(s)\n", head, len(rep.Findings))
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %s: %s\n", strings.ToUpper(f.Kind), c.userText(f.Text))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if bad := filepath.Join(dir, evidence.LedgerName+".bad"); fileExists(bad) {
		fmt.Fprintf(w, "  note: %s is a chain ledger the recorder set aside at a start (it did not verify): the dumps of that chain are reported above\n", bad)
	}
	return rep.OK(), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// stampFlags are the flags of a verb that makes a dump from others:
// --sign-key signs the output with an operator's key, --key checks the
// inputs' signatures for the provenance the output records.
type stampFlags struct {
	signKey *string
	keys    *keysFlag
}

func declareStampFlags(c *command) *stampFlags {
	s := &stampFlags{signKey: c.fs.String("sign-key", "", "sign the output with this Ed25519 private key `FILE` (an operator's, PEM as \"openssl genpkey -algorithm ed25519\" writes it): it then verifies with its public key, and its provenance says what it was made from"), keys: &keysFlag{}}
	c.fs.Var(s.keys, "key", "a public key `FILE` to check the inputs' signatures with, for the provenance the output records (PEM; a keys file holds several); repeatable")
	return s
}

// stamp describes the inputs for the output's provenance (each one's
// SHA-256 and signature) and loads the signing key; a warning names each
// input whose signature does not hold.
func (s *stampFlags) stamp(c *command, ins []string) (*dumpfile.Stamp, error) {
	keys, err := s.keys.load()
	if err != nil {
		return nil, err
	}
	var signer *evidence.Signer
	if *s.signKey != "" {
		if signer, err = keyfile.LoadSigner(*s.signKey); err != nil {
			return nil, err
		}
		if perm, exposed, _ := keyfile.Exposed(*s.signKey); exposed {
			fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: the signing key %s can be read by every local user (mode %04o): chmod 600 %s\n", c.fs.Name(), *s.signKey, perm, *s.signKey)
		}
	}
	st, err := dumpfile.NewStamp("edr-lite "+c.fs.Name(), ins, keys, signer)
	if err != nil {
		return nil, err
	}
	for _, src := range st.Provenance.Sources {
		if src.Signature == evidence.Invalid.String() || src.Signature == evidence.UnknownKey.String() && len(*s.keys) > 0 {
			fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: %s: its signature does not hold (%s): the output's provenance records it\n", c.fs.Name(), src.File, src.Reason)
		}
	}
	return st, nil
}

// provenanceText is what a dump's provenance says, in a line.
func provenanceText(p *dumpinfo.Provenance) string {
	var srcs []string
	for _, s := range p.Sources {
		sig := s.Signature
		if s.KeyID != "" {
			sig = "signed by " + s.KeyID + ", " + s.Signature
		}
		srcs = append(srcs, fmt.Sprintf("%s (sha256 %.16s, %s)", s.File, s.SHA256, sig))
	}
	out := fmt.Sprintf("made by %s from %s", p.MadeBy, strings.Join(srcs, ", "))
	if p.SignedBy != "" {
		out += "; signed by " + p.SignedBy
	}
	return out
}
