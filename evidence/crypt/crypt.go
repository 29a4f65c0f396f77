package crypt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/age"
)

// Ext is the extension an encrypted dump adds to its format's.
const Ext = ".age"

// magic opens every age file.
const magic = "age-encryption.org/v1\n"

// MaxKeyFile bounds a recipients or identity file.
const MaxKeyFile = 1 << 20

// ErrEncrypted: a file is age-encrypted and no identity was given.
var ErrEncrypted = errors.New("encrypted")

// ErrKey: a recipient or identity is not what it must be.
var ErrKey = errors.New("bad age key")

// Sniff reports whether b (a file's first bytes) starts an age file.
func Sniff(b []byte) bool { return bytes.HasPrefix(b, []byte(magic)) }

// IsEncrypted reports whether the file at path is an age file. Only a
// regular file can be (a named pipe or a device is never opened: opening
// one may block).
func IsEncrypted(path string) bool {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	n, _ := io.ReadFull(f, b)
	return Sniff(b[:n])
}

// ParseRecipients reads recipients: each spec is an age recipient
// ("age1...") or a file of them (one a line, # comments), as the age
// tool's -r and -R take them.
func ParseRecipients(specs []string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, s := range specs {
		if strings.HasPrefix(s, "age1") {
			r, err := age.ParseX25519Recipient(s)
			if err != nil {
				return nil, fmt.Errorf("%w: recipient %q: %v", ErrKey, s, err)
			}
			out = append(out, r)
			continue
		}
		b, err := readSmall(s)
		if err != nil {
			return nil, err
		}
		rs, err := age.ParseRecipients(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v (want age recipients, age1..., one a line)", s, ErrKey, err)
		}
		out = append(out, rs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no recipient", ErrKey)
	}
	return out, nil
}

// ParseIdentities reads age identity files (AGE-SECRET-KEY-..., one a
// line, as age-keygen writes them).
func ParseIdentities(paths []string) ([]age.Identity, error) {
	var out []age.Identity
	for _, p := range paths {
		b, err := readSmall(p)
		if err != nil {
			return nil, err
		}
		ids, err := age.ParseIdentities(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v (want an age identity, AGE-SECRET-KEY-..., as age-keygen writes it)", p, ErrKey, err)
		}
		out = append(out, ids...)
	}
	return out, nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxKeyFile {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrKey, MaxKeyFile)
	}
	return b, nil
}

// Header is what an encrypted dump shows without an identity.
type Header struct {
	Size       int64    // the file's size
	Recipients []string // the kind of each recipient stanza (X25519, ...)
}

// ReadHeader reads the age header of the file at path: its recipients'
// kinds, nothing of the content. At most the age header's bound (2 MiB)
// is read.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Header{}, err
	}
	h := Header{Size: st.Size()}
	r := bufio.NewReader(io.LimitReader(f, 2<<20))
	line, err := r.ReadString('\n')
	if err != nil || line != magic {
		return h, fmt.Errorf("%s: not an age file", path)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return h, fmt.Errorf("%s: age header cut short or over 2 MiB", path)
		}
		switch {
		case strings.HasPrefix(line, "---"):
			return h, nil
		case strings.HasPrefix(line, "-> "):
			kind, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "-> ")), " ")
			h.Recipients = append(h.Recipients, kind)
		}
	}
}

// Decrypt writes the plaintext of the age file at path to w, decrypted
// with ids: it authenticates the final chunk first (a cut or extended
// file fails before anything is written), then decrypts front to back,
// 64 KiB at a time.
func Decrypt(path string, w io.Writer, ids []age.Identity) (int64, error) {
	if len(ids) == 0 {
		return 0, fmt.Errorf("%s: %w: give --identity (an age identity of one of its recipients)", path, ErrEncrypted)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r, n, err := age.DecryptReaderAt(f, st.Size(), ids...)
	if err != nil {
		var nm *age.NoIdentityMatchError
		if errors.As(err, &nm) {
			return 0, fmt.Errorf("%s: no identity given matches its recipients (%v)", path, err)
		}
		return 0, fmt.Errorf("%s: cannot decrypt: %v", path, err)
	}
	got, err := io.Copy(w, io.NewSectionReader(r, 0, n))
	if err != nil {
		return got, fmt.Errorf("%s: decrypting: %w", path, err)
	}
	return got, nil
}
