package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
)

// KeyID names an Ed25519 key: the first 8 bytes of the SHA-256 of its raw
// 32-byte public key, written as 16 lower-case hex digits. With OpenSSL:
//
//	openssl pkey -pubin -in PUB.pem -outform DER | tail -c 32 | sha256sum | cut -c1-16
type KeyID [8]byte

// String is the key ID's 16 hex digits.
func (k KeyID) String() string { return hex.EncodeToString(k[:]) }

// IsZero reports whether k is the zero ID (no key).
func (k KeyID) IsZero() bool { return k == KeyID{} }

// IDOf is the key ID of pub.
func IDOf(pub ed25519.PublicKey) KeyID {
	sum := sha256.Sum256(pub)
	return KeyID(sum[:8])
}

// ParseKeyID parses 16 hex digits.
func ParseKeyID(s string) (KeyID, error) {
	var k KeyID
	if err := parseHex(k[:], s); err != nil {
		return k, fmt.Errorf("%w: key ID %q: %v", ErrMalformed, s, err)
	}
	return k, nil
}

// Signer holds an Ed25519 private key (the recorder's, or an operator's)
// and signs seals and ledgers with it.
type Signer struct {
	priv ed25519.PrivateKey
	id   KeyID
	// Path is the file it was loaded from ("" when parsed from bytes).
	Path string
}

// ID is the key ID of the signer's public key.
func (s *Signer) ID() KeyID { return s.id }

// Public is the signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

func (s *Signer) sign(msg []byte) [SignatureSize]byte {
	return [SignatureSize]byte(ed25519.Sign(s.priv, msg))
}

// NewSigner returns a Signer of priv (evidence/keyfile reads key files).
func NewSigner(priv ed25519.PrivateKey) *Signer {
	return &Signer{priv: priv, id: IDOf(priv.Public().(ed25519.PublicKey))}
}

// Private is the signer's private key (to write it to a file).
func (s *Signer) Private() ed25519.PrivateKey { return s.priv }

// GenerateSigner makes a new Ed25519 key from rand (tests).
func GenerateSigner(rand io.Reader) (*Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, err
	}
	return &Signer{priv: priv, id: IDOf(priv.Public().(ed25519.PublicKey))}, nil
}

// Keyring is a set of Ed25519 public keys by key ID: what a reader trusts.
// The zero value (and nil) holds none. Safe for concurrent reads.
type Keyring struct {
	keys map[KeyID]ed25519.PublicKey
}

// Add adds pub.
func (k *Keyring) Add(pub ed25519.PublicKey) KeyID {
	if k.keys == nil {
		k.keys = map[KeyID]ed25519.PublicKey{}
	}
	id := IDOf(pub)
	k.keys[id] = bytes.Clone(pub)
	return id
}

// Lookup returns the key with ID id.
func (k *Keyring) Lookup(id KeyID) (ed25519.PublicKey, bool) {
	if k == nil {
		return nil, false
	}
	pub, ok := k.keys[id]
	return pub, ok
}

// Len is the number of keys.
func (k *Keyring) Len() int {
	if k == nil {
		return 0
	}
	return len(k.keys)
}

// IDs are the keys' IDs, sorted.
func (k *Keyring) IDs() []KeyID {
	if k == nil {
		return nil
	}
	out := make([]KeyID, 0, len(k.keys))
	for id := range k.keys {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

func parseHex(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return fmt.Errorf("want %d hex digits, got %d characters", 2*len(dst), len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return errors.New("want lower-case hex digits")
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}
