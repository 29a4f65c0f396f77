package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/crypt"
	"github.com/edr-lite/edr-lite/internal/units"
)

var jsonMarshal = json.Marshal

// keepsEncrypted are the reading verbs that take an encrypted dump as it
// is: upload sends the encrypted bytes; ls lists a directory; info shows
// what is safe without an identity (infoEncrypted).
var keepsEncrypted = map[string]bool{"upload": true, "ls": true}

// decryptArgs replaces each argument that is a dump encrypted at rest
// (age) by a decrypted copy in a private temporary directory, removed
// when the verb returns; what the verb prints names the user's file, not
// the copy (pathWriter). Without --identity an encrypted argument is a
// clear error (info shows what is safe instead).
func (c *command) decryptArgs(args []string) ([]string, int) {
	if c.identities == nil || keepsEncrypted[c.fs.Name()] {
		return args, exitOK
	}
	var ids []age.Identity
	var dir string
	var pairs []string // temporary path, the user's, ...
	for i, a := range args {
		if a == "-" || !crypt.IsEncrypted(a) {
			continue
		}
		if len(*c.identities) == 0 {
			if c.fs.Name() == "info" {
				continue
			}
			c.fail(fmt.Errorf("%s is encrypted at rest (age): give --identity FILE, an age identity of one of its recipients", a))
			return nil, exitFail
		}
		if ids == nil {
			var err error
			if ids, err = crypt.ParseIdentities(*c.identities); err != nil {
				c.fail(err)
				return nil, exitFail
			}
		}
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "edr-lite-decrypted-"); err != nil { // 0700
				c.fail(err)
				return nil, exitFail
			}
			c.e.cleanups = append(c.e.cleanups, func() { os.RemoveAll(dir) })
		}
		tmp := filepath.Join(dir, fmt.Sprintf("%d", i), strings.TrimSuffix(filepath.Base(a), crypt.Ext))
		if err := decryptTo(a, tmp, ids); err != nil {
			c.fail(err)
			return nil, exitFail
		}
		if c.temp == nil {
			c.temp = map[string]string{}
		}
		c.temp[tmp] = a
		pairs = append(pairs, tmp, a)
		args[i] = tmp
	}
	if len(pairs) > 0 {
		out, errw := &pathWriter{w: c.e.stdout, pairs: pairs}, &pathWriter{w: c.e.stderr, pairs: pairs}
		c.e.stdout, c.e.stderr = out, errw
		c.e.cleanups = append(c.e.cleanups, func() { out.Flush(); errw.Flush() })
	}
	return args, exitOK
}

// decryptTo decrypts the age file in into a new file at out (mode 0600).
func decryptTo(in, out string, ids []age.Identity) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = crypt.Decrypt(in, f, ids)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pathWriter writes to w with each temporary path of pairs (temporary,
// user's, ...) replaced by the user's, across writes: the end of a write
// that may begin a temporary path is held until the next write or Flush.
type pathWriter struct {
	w     io.Writer
	pairs []string
	held  []byte
}

func (p *pathWriter) Write(b []byte) (int, error) {
	buf := append(p.held, b...)
	for i := 0; i < len(p.pairs); i += 2 {
		buf = bytes.ReplaceAll(buf, []byte(p.pairs[i]), []byte(p.pairs[i+1]))
	}
	keep := 0
	for i := 0; i < len(p.pairs); i += 2 {
		keep = max(keep, partialSuffix(buf, p.pairs[i]))
	}
	p.held = append(p.held[:0:0], buf[len(buf)-keep:]...)
	if _, err := p.w.Write(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	return len(b), nil
}

// partialSuffix is the length of the longest end of b that begins s
// (and is shorter than s).
func partialSuffix(b []byte, s string) int {
	for n := min(len(s)-1, len(b)); n > 0; n-- {
		if bytes.HasSuffix(b, []byte(s[:n])) {
			return n
		}
	}
	return 0
}

// Flush writes what is held.
func (p *pathWriter) Flush() {
	if len(p.held) > 0 {
		p.w.Write(p.held)
		p.held = nil
	}
}

// infoEncrypted prints what can be told of an encrypted dump without an
// identity: its size, its recipients' kinds, and where its directory's
// chain ledger places it (its seal is inside the encryption).
func infoEncrypted(c *command, p string, asJSON bool) {
	h, err := crypt.ReadHeader(p)
	if err != nil {
		c.fail(err)
		return
	}
	sig := "sealed inside the encryption, if signed: give --identity to check it"
	var chain *ledgerPlace
	if lp, ok := placeInLedger(p); ok {
		chain = &lp
		sig += fmt.Sprintf("; its directory's chain ledger (signed by %s) lists it as #%d of chain %s", lp.Key, lp.Counter, lp.Chain)
	}
	if asJSON {
		b, _ := jsonMarshal(map[string]any{"path": p, "format": "age", "size": h.Size, "recipients": h.Recipients,
			"encrypted": true, "chain": chain})
		fmt.Fprintf(c.e.stdout, "%s\n", b)
	} else {
		fmt.Fprintf(c.e.stdout, "path:       %s\n", p)
		fmt.Fprintf(c.e.stdout, "format:     encrypted at rest (age), %s, %d recipient(s): %s\n", units.FormatSize(h.Size), len(h.Recipients), strings.Join(h.Recipients, ", "))
		fmt.Fprintf(c.e.stdout, "signature:  %s\n", sig)
		fmt.Fprintf(c.e.stdout, "contents:   not shown: give --identity FILE (an age identity of one of its recipients)\n")
	}
	fmt.Fprintf(c.e.stderr, "edr-lite info: %s is encrypted: its contents need --identity\n", p)
}

// ledgerPlace is an encrypted dump's place in its directory's chain as
// the ledger says (not checked against the dump: its seal is encrypted).
type ledgerPlace struct {
	Chain   string `json:"chain"`
	Counter uint64 `json:"counter"`
	Seal    string `json:"seal"`
	Key     string `json:"ledger_key_id"`
}

// placeInLedger finds the dump at p in its directory's chain ledger.
func placeInLedger(p string) (ledgerPlace, bool) {
	l, err := evidence.ReadLedger(filepath.Dir(p), nil)
	if err != nil || l == nil {
		return ledgerPlace{}, false
	}
	for _, e := range l.Entries {
		if e.File == filepath.Base(p) {
			return ledgerPlace{Chain: l.Chain, Counter: e.Counter, Seal: e.ID, Key: l.Key.String()}, true
		}
	}
	return ledgerPlace{}, false
}

// decryptOne decrypts the encrypted dump p (a file of a directory the
// verb reads) into the verb's private temporary directory with
// --identity, and returns the copy's path.
func (c *command) decryptOne(p string) (string, error) {
	if c.identities == nil || len(*c.identities) == 0 {
		return "", fmt.Errorf("%s is encrypted at rest (age): give --identity FILE", p)
	}
	ids, err := crypt.ParseIdentities(*c.identities)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "edr-lite-decrypted-")
	if err != nil {
		return "", err
	}
	c.e.cleanups = append(c.e.cleanups, func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, strings.TrimSuffix(filepath.Base(p), crypt.Ext))
	if err := decryptTo(p, tmp, ids); err != nil {
		return "", err
	}
	return tmp, nil
}
