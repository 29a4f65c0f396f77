package evidence

import (
	"crypto/ed25519"
	"fmt"
)

// Found is what a format's reader found of a file's seal
// (pack.FindSeal, mcap.FindSeal): the seal, if any, and the digest of the
// file's bytes as they are now, over what the seal covers.
type Found struct {
	// Seal is the seal found (nil: none).
	Seal *Seal
	// Digest is the SHA-256 of the file's bytes now, the seal record left
	// out, over Hashed bytes; valid with a Seal.
	Digest Digest
	Hashed int64
	// Size is the file's size.
	Size int64
	// Problem says why the file's seal cannot be trusted apart from the
	// digest (a damaged seal record, a changed CRC the seal's record is
	// under); "" when none. Without a Seal it says why none was found
	// when the file looks as if it had one.
	Problem string
	// Complete: the file ends as its writer closed it (pack: a valid
	// trailer; MCAP: a footer), so a file without a seal is unsigned,
	// not cut.
	Complete bool
}

// Status is a verdict on a file's seal.
type Status int

// The verdicts.
const (
	// Unsigned: the file carries no seal.
	Unsigned Status = iota
	// Valid: the file is what the key holder signed, byte for byte.
	Valid
	// Invalid: the file or its seal was changed, cut or extended, or the
	// seal was made for another file (Verdict.Reason says which).
	Invalid
	// UnknownKey: the digest matches, but the key that signed is not
	// among the keys given (the signature could not be checked).
	UnknownKey
	// NotChecked: the digest matches; no keys were given, so the
	// signature was not checked (anyone can make such a seal).
	NotChecked
)

func (s Status) String() string {
	return [...]string{"unsigned", "valid", "invalid", "unknown key", "not checked"}[s]
}

// Verdict is Judge's answer.
type Verdict struct {
	Status Status
	Seal   *Seal
	// Reason says why in a sentence, for every status but Valid.
	Reason string
}

// OK reports whether the verdict is Valid.
func (v Verdict) OK() bool { return v.Status == Valid }

// Summary is the verdict in a few words: "signed by KEY-ID, valid",
// "unsigned", "signed by KEY-ID, invalid: REASON".
func (v Verdict) Summary() string {
	switch v.Status {
	case Unsigned:
		if v.Reason != "" {
			return "no signature found: " + v.Reason
		}
		return "unsigned"
	case Valid:
		return fmt.Sprintf("signed by %s%s, valid", v.Seal.Key, v.chain())
	}
	if v.Seal == nil {
		return fmt.Sprintf("%s: %s", v.Status, v.Reason)
	}
	return fmt.Sprintf("signed by %s%s, %s: %s", v.Seal.Key, v.chain(), v.Status, v.Reason)
}

// chain is " (chain ID #N)" for a chained seal.
func (v Verdict) chain() string {
	if v.Seal == nil || v.Seal.Link.Chain.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (chain %s #%d)", v.Seal.Link.Chain, v.Seal.Link.Counter)
}

func bytesN(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// Judge checks what a format's reader found against keys (none: the
// signature is not checked; NotChecked at best).
func Judge(f Found, keys *Keyring) Verdict {
	s := f.Seal
	if s == nil {
		v := Verdict{Status: Unsigned, Reason: f.Problem}
		if f.Problem != "" {
			v.Status = Invalid
		} else if !f.Complete {
			v.Reason = "the file does not end as a closed dump (cut short or never closed): a seal, if it had one, is lost"
		}
		return v
	}
	v := Verdict{Seal: s, Status: Invalid}
	switch {
	case f.Problem != "":
		v.Reason = f.Problem
	case f.Hashed > s.Length:
		v.Reason = fmt.Sprintf("the file is %s longer than what was signed (appended or inserted)", bytesN(f.Hashed-s.Length))
	case f.Hashed < s.Length:
		v.Reason = fmt.Sprintf("the file is %s shorter than what was signed (cut short, or bytes removed)", bytesN(s.Length-f.Hashed))
	case f.Digest != s.Digest:
		v.Reason = fmt.Sprintf("the file's bytes are not those signed: SHA-256 %s, signed %s (changed after it was sealed)", f.Digest, s.Digest)
	default:
		if keys.Len() == 0 {
			v.Status = NotChecked
			v.Reason = "no public key given: the digest matches, the signature was not checked (--key)"
			return v
		}
		pub, ok := keys.Lookup(s.Key)
		if !ok {
			v.Status = UnknownKey
			v.Reason = fmt.Sprintf("signed by key %s, which is not among the %d key(s) given", s.Key, keys.Len())
			return v
		}
		if !ed25519.Verify(pub, s.Statement(), s.Signature[:]) {
			v.Reason = fmt.Sprintf("the signature does not verify with key %s: the seal was changed, or made for another file or by another key", s.Key)
			return v
		}
		v.Status, v.Reason = Valid, ""
	}
	return v
}
