package evidence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Sizes of a seal's parts.
const (
	DigestSize    = sha256.Size
	SignatureSize = 64
	ChainIDSize   = 16
	// SealSize is the size of a seal in its binary form (a pack seal
	// section's payload): the statement's fields, then the signature.
	SealSize = 4 + DigestSize + 8 + 8 + 8 + ChainIDSize + 8 + DigestSize + SignatureSize
	// SealVersion is the version of the seal this package writes and reads.
	SealVersion = 1
	// statementContext starts every statement: a signature over a seal
	// can be nothing else (a ledger's starts with another).
	statementContext = "edr-lite seal 1\x00"
	// hashSHA256 and sigEd25519 are the algorithm codes of version 1.
	hashSHA256 = 1
	sigEd25519 = 1
)

// Format is the file format a seal belongs to: part of what is signed, so
// a seal cannot be moved to a file of the other format.
type Format uint8

// Formats.
const (
	FormatPack Format = 1
	FormatMCAP Format = 2
)

func (f Format) String() string {
	switch f {
	case FormatPack:
		return "pack"
	case FormatMCAP:
		return "mcap"
	}
	return fmt.Sprintf("format %d", uint8(f))
}

// Digest is a SHA-256.
type Digest [DigestSize]byte

// String is the digest's 64 hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is all zeros (no digest: a chain's first
// dump has no previous one).
func (d Digest) IsZero() bool { return d == Digest{} }

// ParseDigest parses 64 lower-case hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if err := parseHex(d[:], s); err != nil {
		return d, fmt.Errorf("%w: digest %q: %v", ErrMalformed, s, err)
	}
	return d, nil
}

// ChainID names a chain: the dumps one recorder wrote into one directory.
type ChainID [ChainIDSize]byte

func (c ChainID) String() string { return hex.EncodeToString(c[:]) }

// IsZero reports whether c is the zero ID (the dump is in no chain).
func (c ChainID) IsZero() bool { return c == ChainID{} }

// ParseChainID parses 32 lower-case hex digits.
func ParseChainID(s string) (ChainID, error) {
	var c ChainID
	if err := parseHex(c[:], s); err != nil {
		return c, fmt.Errorf("%w: chain ID %q: %v", ErrMalformed, s, err)
	}
	return c, nil
}

// Link is a dump's place in its chain: the chain, its counter there (from
// 1, one more than the dump the recorder wrote before it, across
// restarts) and the seal ID of that dump (zero for the first).
type Link struct {
	Chain   ChainID
	Counter uint64
	Prev    Digest
}

// Seal is what a signed dump carries: the digest of its bytes (all but the
// seal record itself; an MCAP file's data section CRC counted as zero, see
// docs/evidence.md), how many bytes that digest covers, where the seal
// record lies, the signing key, the dump's chain link, and the Ed25519
// signature over all of that (Statement).
type Seal struct {
	Version   uint8
	Format    Format
	Digest    Digest
	Length    int64 // the bytes the digest covers
	At        int64 // the offset of the seal record in the file
	Key       KeyID
	Link      Link
	Signature [SignatureSize]byte
}

// appendFields appends the seal's binary form without the signature.
func (s *Seal) appendFields(b []byte) []byte {
	b = append(b, s.Version, byte(s.Format), hashSHA256, sigEd25519)
	b = append(b, s.Digest[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Length))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.At))
	b = append(b, s.Key[:]...)
	b = append(b, s.Link.Chain[:]...)
	b = binary.LittleEndian.AppendUint64(b, s.Link.Counter)
	return append(b, s.Link.Prev[:]...)
}

// AppendBinary appends the seal's binary form (SealSize bytes; the pack
// seal section's payload, pack/FORMAT.md).
func (s *Seal) AppendBinary(b []byte) []byte {
	return append(s.appendFields(b), s.Signature[:]...)
}

// Statement is the message the signature signs: a fixed context string,
// then the seal's binary form without the signature.
func (s *Seal) Statement() []byte {
	return s.appendFields(append(make([]byte, 0, len(statementContext)+SealSize), statementContext...))
}

// ID is the seal's identity: the SHA-256 of its statement. It names the
// dump in its chain (the next dump's Link.Prev) and in ledgers.
func (s *Seal) ID() Digest { return sha256.Sum256(s.Statement()) }

// ParseSeal reads a seal in binary form. It checks the form only; Judge
// checks the seal against the file and the keys.
func ParseSeal(b []byte) (Seal, error) {
	var s Seal
	if len(b) < 4 {
		return s, fmt.Errorf("%w: seal of %d bytes, want %d", ErrMalformed, len(b), SealSize)
	}
	if b[0] != SealVersion {
		return s, fmt.Errorf("%w: seal version %d, this reader knows %d", ErrUnsupported, b[0], SealVersion)
	}
	if len(b) != SealSize {
		return s, fmt.Errorf("%w: seal of %d bytes, want %d", ErrMalformed, len(b), SealSize)
	}
	if b[2] != hashSHA256 || b[3] != sigEd25519 {
		return s, fmt.Errorf("%w: seal algorithms %d/%d, this reader knows SHA-256/Ed25519 (1/1)", ErrUnsupported, b[2], b[3])
	}
	s.Version, s.Format = b[0], Format(b[1])
	if s.Format != FormatPack && s.Format != FormatMCAP {
		return s, fmt.Errorf("%w: seal of %v", ErrMalformed, s.Format)
	}
	p := 4
	p += copy(s.Digest[:], b[p:])
	s.Length = int64(binary.LittleEndian.Uint64(b[p:]))
	s.At = int64(binary.LittleEndian.Uint64(b[p+8:]))
	p += 16
	if s.Length < 0 || s.At < 0 || s.At > s.Length {
		return s, fmt.Errorf("%w: seal length %d, at %d", ErrMalformed, s.Length, s.At)
	}
	p += copy(s.Key[:], b[p:])
	p += copy(s.Link.Chain[:], b[p:])
	s.Link.Counter = binary.LittleEndian.Uint64(b[p:])
	p += 8
	p += copy(s.Link.Prev[:], b[p:])
	copy(s.Signature[:], b[p:])
	if s.Link.Chain.IsZero() != (s.Link.Counter == 0) || s.Link.Chain.IsZero() && !s.Link.Prev.IsZero() {
		return s, fmt.Errorf("%w: seal chain %s, counter %d", ErrMalformed, s.Link.Chain, s.Link.Counter)
	}
	return s, nil
}

// ProvenanceName is the metadata section (pack) or record (MCAP, one value
// "base64", as other pack metadata) under which a file made from dumps
// says what it was made from (dumpinfo.Provenance).
const ProvenanceName = "edr.provenance"

// Stamped reports whether a file's metadata of that name is its stamp: its
// seal (MetadataName, MCAP) or its provenance. Both are true of that file's
// bytes only: a file made from it (a cut, a conversion, an export, an
// import) never carries them.
func Stamped(name string) bool {
	return name == MetadataName || name == ProvenanceName
}

// The keys of a seal in an MCAP Metadata record ("edr.seal"): every field
// as text, so "mcap info" and viewers show it.
const (
	MetadataName = "edr.seal"
	kVersion     = "version"
	kFormat      = "format"
	kDigest      = "digest"
	kLength      = "length"
	kAt          = "at"
	kKey         = "key_id"
	kChain       = "chain"
	kCounter     = "counter"
	kPrev        = "prev"
	kSignature   = "signature"
	kAlgorithm   = "algorithm"
	algorithm    = "sha256+ed25519"
)

// Map is the seal as the key/value pairs of an MCAP Metadata record; a
// writer that sorts keys (every MCAP writer of edr-lite) gives it one
// canonical encoding, which ParseMap's caller checks by encoding again.
func (s *Seal) Map() map[string]string {
	m := map[string]string{
		kVersion: strconv.Itoa(int(s.Version)), kFormat: s.Format.String(), kAlgorithm: algorithm,
		kDigest: s.Digest.String(), kLength: fixedDecimal(s.Length), kAt: fixedDecimal(s.At),
		kKey: s.Key.String(), kSignature: hex.EncodeToString(s.Signature[:]),
	}
	if !s.Link.Chain.IsZero() {
		m[kChain] = s.Link.Chain.String()
		m[kCounter] = strconv.FormatUint(s.Link.Counter, 10)
		m[kPrev] = s.Link.Prev.String()
	}
	return m
}

// ParseMap reads a seal from an MCAP Metadata record's pairs (Map).
func ParseMap(m map[string]string) (Seal, error) {
	var s Seal
	if m[kVersion] != strconv.Itoa(SealVersion) {
		if _, ok := m[kVersion]; !ok {
			return s, fmt.Errorf("%w: seal without a version", ErrMalformed)
		}
		return s, fmt.Errorf("%w: seal version %q, this reader knows %d", ErrUnsupported, m[kVersion], SealVersion)
	}
	if m[kAlgorithm] != algorithm {
		return s, fmt.Errorf("%w: seal algorithm %q, this reader knows %q", ErrUnsupported, m[kAlgorithm], algorithm)
	}
	want := 8
	s.Version = SealVersion
	switch m[kFormat] {
	case "mcap":
		s.Format = FormatMCAP
	case "pack":
		s.Format = FormatPack
	default:
		return s, fmt.Errorf("%w: seal format %q", ErrMalformed, m[kFormat])
	}
	var err error
	if s.Digest, err = ParseDigest(m[kDigest]); err != nil {
		return s, err
	}
	if s.Length, err = parseFixedDecimal(m[kLength], kLength); err != nil {
		return s, err
	}
	if s.At, err = parseFixedDecimal(m[kAt], kAt); err != nil {
		return s, err
	}
	if s.At > s.Length {
		return s, fmt.Errorf("%w: seal at %d past its length %d", ErrMalformed, s.At, s.Length)
	}
	if s.Key, err = ParseKeyID(m[kKey]); err != nil {
		return s, err
	}
	if err := parseHex(s.Signature[:], m[kSignature]); err != nil {
		return s, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	if _, ok := m[kChain]; ok {
		want += 3
		if s.Link.Chain, err = ParseChainID(m[kChain]); err != nil {
			return s, err
		}
		if s.Link.Chain.IsZero() {
			return s, fmt.Errorf("%w: seal chain of zeros", ErrMalformed)
		}
		n, err := parseDecimal(m[kCounter], kCounter)
		if err != nil {
			return s, err
		}
		if n == 0 {
			return s, fmt.Errorf("%w: seal counter 0", ErrMalformed)
		}
		s.Link.Counter = uint64(n)
		if s.Link.Prev, err = ParseDigest(m[kPrev]); err != nil {
			return s, err
		}
	}
	if len(m) != want {
		return s, fmt.Errorf("%w: seal with %d fields, want %d", ErrMalformed, len(m), want)
	}
	return s, nil
}

// fixedDecimal writes v in 20 decimal digits, zero-padded: a seal's
// offsets have one width whatever their value, so a writer knows the seal
// record's length before it knows the length the seal covers.
func fixedDecimal(v int64) string { return fmt.Sprintf("%020d", v) }

func parseFixedDecimal(s, key string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || fixedDecimal(v) != s {
		return 0, fmt.Errorf("%w: seal %s %q (want 20 decimal digits)", ErrMalformed, key, s)
	}
	return v, nil
}

// parseDecimal parses a canonical non-negative decimal (no sign, no
// leading zero).
func parseDecimal(s, key string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%w: seal %s %q", ErrMalformed, key, s)
	}
	return v, nil
}
