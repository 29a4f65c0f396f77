package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/evidence"
)

// Key file limits: a key file or a keys file larger than MaxKeyFile is not
// read; a keys file holds at most MaxKeys public keys.
const (
	MaxKeyFile = 1 << 20
	MaxKeys    = 4096
)

// ErrKey: a key file is not what it must be (not PEM, not Ed25519, a
// private key where a public one belongs, too large).
var ErrKey = errors.New("bad key")

// ParseSigner reads an Ed25519 private key in PEM, PKCS #8 ("PRIVATE
// KEY").
func ParseSigner(data []byte) (*evidence.Signer, error) {
	blk, _ := pem.Decode(data)
	if blk == nil {
		return nil, fmt.Errorf("%w: no PEM block (want an Ed25519 private key as \"openssl genpkey -algorithm ed25519\" writes)", ErrKey)
	}
	switch blk.Type {
	case "PRIVATE KEY":
	case "PUBLIC KEY":
		return nil, fmt.Errorf("%w: a public key, not a private one: signing needs the private key", ErrKey)
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: the private key is encrypted with a passphrase, which the recorder cannot ask for (openssl pkey -in KEY -out PLAIN)", ErrKey)
	default:
		return nil, fmt.Errorf("%w: PEM block %q, want \"PRIVATE KEY\" (PKCS #8)", ErrKey, blk.Type)
	}
	priv, err := parsePKCS8(blk.Bytes)
	if err != nil {
		return nil, err
	}
	return evidence.NewSigner(priv), nil
}

// LoadSigner reads the private key file at path (ParseSigner). Its mode is
// not checked here: Exposed says whether others may read it.
func LoadSigner(path string) (*evidence.Signer, error) {
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseSigner(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// PrivatePEM is s's private key in PEM, PKCS #8, as openssl writes it.
func PrivatePEM(s *evidence.Signer) []byte {
	der := append(bytes.Clone(pkcs8Prefix), s.Private().Seed()...)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// PublicPEM is s's public key as "openssl pkey -pubout" writes it.
func PublicPEM(s *evidence.Signer) []byte {
	der := append(bytes.Clone(spkiPrefix), s.Public()...)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Exposed reports whether users other than the file's owner and group
// may read the key file at path (mode o+r), with its permission bits.
func Exposed(path string) (perm os.FileMode, exposed bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, false, err
	}
	return st.Mode().Perm(), st.Mode().Perm()&0o004 != 0, nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > MaxKeyFile {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes, not a key file", path, ErrKey, MaxKeyFile)
	}
	return data, nil
}

// ParseKeys reads a keys file: one or more Ed25519 public keys in PEM
// ("PUBLIC KEY"), one after another; text between the blocks (comments,
// names) is ignored. A file that holds no public key, a block that is not
// an Ed25519 public key, or more than MaxKeys keys is an error naming the
// block.
func ParseKeys(data []byte) (*evidence.Keyring, error) {
	if len(data) > MaxKeyFile {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrKey, MaxKeyFile)
	}
	k := &evidence.Keyring{}
	rest := data
	for n := 1; ; n++ {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if k.Len() >= MaxKeys {
			return nil, fmt.Errorf("%w: more than %d keys", ErrKey, MaxKeys)
		}
		switch blk.Type {
		case "PUBLIC KEY":
		case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%w: block %d is a private key: give its public key (openssl pkey -in KEY -pubout), never the private one", ErrKey, n)
		default:
			return nil, fmt.Errorf("%w: block %d is %q, want \"PUBLIC KEY\"", ErrKey, n, blk.Type)
		}
		pub, err := parseSPKI(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: block %d: %v", ErrKey, n, err)
		}
		k.Add(pub)
	}
	if k.Len() == 0 {
		return nil, fmt.Errorf("%w: no PEM public key (want \"-----BEGIN PUBLIC KEY-----\" as \"openssl pkey -pubout\" writes)", ErrKey)
	}
	return k, nil
}

// LoadKeys reads keys files (ParseKeys) into one Keyring.
func LoadKeys(paths ...string) (*evidence.Keyring, error) {
	all := &evidence.Keyring{}
	for _, p := range paths {
		data, err := readSmall(p)
		if err != nil {
			return nil, err
		}
		k, err := ParseKeys(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, id := range k.IDs() {
			if all.Len() >= MaxKeys {
				return nil, fmt.Errorf("%s: %w: more than %d keys in all", p, ErrKey, MaxKeys)
			}
			pub, _ := k.Lookup(id)
			all.Add(pub)
		}
	}
	return all, nil
}

// The DER of Ed25519 keys (RFC 8410): a private key in PKCS #8 (RFC 5208)
// and a public key as a SubjectPublicKeyInfo (RFC 5280). Parsed with
// encoding/asn1, not crypto/x509, whose key parsers link RSA and ECDSA
// (key checks that sign) into every build: the ECU build has no room for
// them (docs/ecu.md).
var (
	oidEd25519 = asn1.ObjectIdentifier{1, 3, 101, 112}
	// the DER before the key's 32 bytes, as openssl and crypto/x509 write it
	pkcs8Prefix = []byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20}
	spkiPrefix  = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}
)

type algorithm struct {
	OID    asn1.ObjectIdentifier
	Params asn1.RawValue `asn1:"optional"`
}

// keyKinds names the keys of other algorithms a user may give.
var keyKinds = []struct {
	oid  asn1.ObjectIdentifier
	name string
}{
	{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}, "an RSA key"},
	{asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}, "an ECDSA key"},
	{asn1.ObjectIdentifier{1, 3, 101, 110}, "an X25519 key"},
	{asn1.ObjectIdentifier{1, 3, 101, 111}, "an X448 key"},
	{asn1.ObjectIdentifier{1, 3, 101, 113}, "an Ed448 key"},
}

// checkAlgorithm says what is wrong with a key of algorithm a (nil: it is
// Ed25519, without parameters, as RFC 8410 has it).
func checkAlgorithm(a algorithm) error {
	if !a.OID.Equal(oidEd25519) {
		for _, k := range keyKinds {
			if a.OID.Equal(k.oid) {
				return fmt.Errorf("%s, want Ed25519 (openssl genpkey -algorithm ed25519)", k.name)
			}
		}
		return fmt.Errorf("a key of algorithm %s, want Ed25519 (openssl genpkey -algorithm ed25519)", a.OID)
	}
	if len(a.Params.FullBytes) != 0 {
		return errors.New("an Ed25519 key with algorithm parameters, which it has none of")
	}
	return nil
}

// parsePKCS8 reads an Ed25519 private key in PKCS #8 (the attributes and
// public key of version 2 are ignored, as crypto/x509 ignores them).
func parsePKCS8(der []byte) (ed25519.PrivateKey, error) {
	var k struct {
		Version    int
		Algo       algorithm
		PrivateKey []byte
	}
	if rest, err := asn1.Unmarshal(der, &k); err != nil {
		return nil, fmt.Errorf("%w: not a PKCS #8 private key: %v", ErrKey, err)
	} else if len(rest) > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the PKCS #8 private key", ErrKey, len(rest))
	}
	if k.Version != 0 && k.Version != 1 {
		return nil, fmt.Errorf("%w: PKCS #8 version %d, want 0 or 1", ErrKey, k.Version)
	}
	if err := checkAlgorithm(k.Algo); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	var seed []byte
	if rest, err := asn1.Unmarshal(k.PrivateKey, &seed); err != nil || len(rest) > 0 || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%w: the Ed25519 private key is not an OCTET STRING of %d bytes", ErrKey, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// parseSPKI reads an Ed25519 public key as a SubjectPublicKeyInfo.
func parseSPKI(der []byte) (ed25519.PublicKey, error) {
	var k struct {
		Algo algorithm
		Key  asn1.BitString
	}
	if rest, err := asn1.Unmarshal(der, &k); err != nil {
		return nil, fmt.Errorf("not a public key (SubjectPublicKeyInfo): %v", err)
	} else if len(rest) > 0 {
		return nil, fmt.Errorf("%d bytes after the public key", len(rest))
	}
	if err := checkAlgorithm(k.Algo); err != nil {
		return nil, err
	}
	if k.Key.BitLength != 8*ed25519.PublicKeySize {
		return nil, fmt.Errorf("an Ed25519 public key of %d bits, want %d", k.Key.BitLength, 8*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(k.Key.Bytes), nil
}
