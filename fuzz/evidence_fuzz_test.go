package fuzz

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/crypt"
	"github.com/edr-lite/edr-lite/evidence/keyfile"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// fuzzSigner is a fixed key (its seed all 7s): seeds sealed with it stay
// valid from run to run.
var fuzzSigner = evidence.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))

func fuzzKeys() *evidence.Keyring {
	k := &evidence.Keyring{}
	k.Add(fuzzSigner.Public())
	return k
}

// sealedPack is a small sealed pack file.
func sealedPack(link evidence.Link) []byte {
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{Writer: "seed", CreatedNs: 1,
		Seal: evidence.NewSealer(fuzzSigner, evidence.FormatPack, link)})
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		f := pack.NewFrame(uint64(i), int64(i))
		f.AddMetaWithData("t", "", nil, int64(i), int64(i), bytes.Repeat([]byte{byte(i)}, 100))
		if err := w.WriteFrame(f); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// sealedMCAP is a small sealed MCAP file.
func sealedMCAP() []byte {
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, mcap.Options{Seal: evidence.NewSealer(fuzzSigner, evidence.FormatMCAP, evidence.Link{})})
	if err != nil {
		panic(err)
	}
	ch, _ := w.AddChannel(0, "t", "x-edr-raw", nil)
	for i := range 3 {
		if err := w.WriteMessage(&mcap.Message{ChannelID: ch, LogTime: uint64(i), Data: []byte{byte(i)}}); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// FuzzSealedFile finds and judges the seal of arbitrary bytes as a pack
// and as an MCAP file (the way verify --key and info reach them).
// Properties: no panic; a Valid verdict only for bytes that are exactly a
// sealed file as its writer made it (the seeds); a seal found is of the
// format asked, and lies inside the file.
func FuzzSealedFile(f *testing.F) {
	packs := [][]byte{sealedPack(evidence.Link{}), sealedPack(evidence.Link{Chain: evidence.ChainID{1}, Counter: 2, Prev: evidence.Digest{3}})}
	m := sealedMCAP()
	for _, b := range append(packs, m) {
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(bytes.Clone(b), 0))
	}
	valid := map[string]bool{string(packs[0]): true, string(packs[1]): true, string(m): true}
	keys := fuzzKeys()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []evidence.Format{evidence.FormatPack, evidence.FormatMCAP} {
			find := pack.FindSeal
			if format == evidence.FormatMCAP {
				find = mcap.FindSeal
			}
			found, err := find(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatalf("%v: %v (an in-memory reader fails no read)", format, err)
			}
			if s := found.Seal; s != nil && (s.Format != format || s.At < 0 || s.At >= int64(len(data))) {
				t.Fatalf("%v: seal %+v in %d bytes", format, s, len(data))
			}
			if v := evidence.Judge(found, keys); v.OK() && !valid[string(data)] {
				t.Fatalf("%v: %d bytes that are no seed judged valid", format, len(data))
			}
		}
	})
}

// FuzzSeal parses arbitrary bytes as a seal's binary form and as the
// values of an MCAP seal record. Properties: no panic; what parses
// encodes back to the same bytes (one encoding).
func FuzzSeal(f *testing.F) {
	sl := evidence.NewSealer(fuzzSigner, evidence.FormatPack, evidence.Link{Chain: evidence.ChainID{1}, Counter: 1})
	s, _ := sl.Finish(0)
	f.Add(s.AppendBinary(nil), "1", "mcap", s.Digest.String(), "00000000000000000100")
	f.Add(make([]byte, evidence.SealSize), "2", "pack", "", "1")
	f.Fuzz(func(t *testing.T, b []byte, version, format, digest, length string) {
		if got, err := evidence.ParseSeal(b); err == nil {
			if !bytes.Equal(got.AppendBinary(nil), b) {
				t.Fatalf("binary seal parsed to %+v does not encode back", got)
			}
		}
		m := s.Map()
		m["version"], m["format"], m["digest"], m["length"] = version, format, digest, length
		if got, err := evidence.ParseMap(m); err == nil {
			back := got.Map()
			for k, v := range m {
				if back[k] != v {
					t.Fatalf("map seal %q=%q encodes back as %q", k, v, back[k])
				}
			}
		}
	})
}

// FuzzChainLedger reads arbitrary bytes as a dump directory's chain
// ledger (a crash, a bad disk, a hand edit leave it), as verify --chain
// and the recorder at start do. Properties: no panic; an error wraps
// ErrLedger; a ledger that parses has counters following its floor and
// names that are plain file names; one that verifies is byte for byte what
// signing its content gives.
func FuzzChainLedger(f *testing.F) {
	dir := f.TempDir()
	c, _, err := evidence.OpenChain(dir, fuzzSigner, nil, 0o600)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"a.pack", "b.pack", "c.pack"} {
		sl := evidence.NewSealer(fuzzSigner, evidence.FormatPack, c.Next())
		s, _ := sl.Finish(0)
		if err := c.Append(s, name); err != nil {
			f.Fatal(err)
		}
	}
	c.Rotated("a.pack", "max_files")
	seed, err := os.ReadFile(filepath.Join(dir, evidence.LedgerName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("{\"version\":1}\ned25519 0000000000000000 00\n"))
	keys := fuzzKeys()
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := evidence.ParseLedger(data, keys)
		if err != nil {
			if !errors.Is(err, evidence.ErrLedger) && !errors.Is(err, evidence.ErrMalformed) {
				t.Fatalf("error %v wraps neither ErrLedger nor ErrMalformed", err)
			}
			return
		}
		for i, e := range l.Entries {
			if e.Counter != l.Floor.Counter+uint64(i)+1 || filepath.Base(e.File) != e.File {
				t.Fatalf("entry %d: %+v after floor %d", i, e, l.Floor.Counter)
			}
		}
		if l.Verified && !bytes.Equal(data, l.Sign(fuzzSigner)) {
			t.Fatal("a verified ledger is not what signing its content gives (one encoding)")
		}
		var dumps []evidence.DirDump
		for _, e := range l.Entries {
			dumps = append(dumps, evidence.DirDump{Name: e.File})
		}
		evidence.CheckChain(l, dumps) // no panic on whatever parses
	})
}

// FuzzKeysFile reads arbitrary bytes as a keys file (verify --key) and as
// a private key file (evidence.sign_key). Properties: no panic; an error
// wraps keyfile.ErrKey; a keys file that parses holds between 1 and
// MaxKeys keys.
func FuzzKeysFile(f *testing.F) {
	f.Add(keyfile.PublicPEM(fuzzSigner))
	f.Add(append(append([]byte("# two\n"), keyfile.PublicPEM(fuzzSigner)...), keyfile.PrivatePEM(fuzzSigner)...))
	f.Add(keyfile.PrivatePEM(fuzzSigner))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := keyfile.ParseKeys(data)
		if err != nil && !errors.Is(err, keyfile.ErrKey) {
			t.Fatalf("keys: error %v does not wrap ErrKey", err)
		}
		if err == nil && (k.Len() < 1 || k.Len() > keyfile.MaxKeys) {
			t.Fatalf("%d keys", k.Len())
		}
		if _, err := keyfile.ParseSigner(data); err != nil && !errors.Is(err, keyfile.ErrKey) {
			t.Fatalf("signer: error %v does not wrap ErrKey", err)
		}
	})
}

// FuzzKeyDER reads arbitrary DER as an Ed25519 private key (PKCS #8) and
// public key (SubjectPublicKeyInfo) through keyfile, which parses them
// with encoding/asn1, against crypto/x509. Properties: a key keyfile
// accepts, crypto/x509 reads as the same Ed25519 key; one crypto/x509
// reads as Ed25519, keyfile accepts too, unless keyfile's stricter reading
// names why (bytes after the key, a version PKCS #8 does not have, a bit
// string not of whole bytes).
func FuzzKeyDER(f *testing.F) {
	for _, p := range [][]byte{keyfile.PrivatePEM(fuzzSigner), keyfile.PublicPEM(fuzzSigner)} {
		b, _ := pem.Decode(p)
		f.Add(b.Bytes)
	}
	f.Add([]byte{0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70})
	f.Fuzz(func(t *testing.T, der []byte) {
		s, err := keyfile.ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		k, xerr := x509.ParsePKCS8PrivateKey(der)
		xk, isEd := k.(ed25519.PrivateKey)
		switch {
		case err == nil && (xerr != nil || !isEd || !xk.Equal(s.Private())):
			t.Fatalf("private key: keyfile accepts, x509 says %T %v", k, xerr)
		case err != nil && !errors.Is(err, keyfile.ErrKey):
			t.Fatalf("private key: error %v does not wrap ErrKey", err)
		case err != nil && xerr == nil && isEd && !strings.Contains(err.Error(), "after") && !strings.Contains(err.Error(), "version"):
			t.Fatalf("private key: x509 reads an Ed25519 key, keyfile says %v", err)
		}
		ring, err := keyfile.ParseKeys(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		pk, xerr := x509.ParsePKIXPublicKey(der)
		xpub, isEd := pk.(ed25519.PublicKey)
		switch {
		case err == nil && (xerr != nil || !isEd):
			t.Fatalf("public key: keyfile accepts, x509 says %T %v", pk, xerr)
		case err == nil:
			if pub, ok := ring.Lookup(evidence.IDOf(xpub)); ring.Len() != 1 || !ok || !pub.Equal(xpub) {
				t.Fatalf("public key: keyfile reads another key than x509's %x", xpub)
			}
		case !errors.Is(err, keyfile.ErrKey):
			t.Fatalf("public key: error %v does not wrap ErrKey", err)
		case xerr == nil && isEd && !strings.Contains(err.Error(), "bits"):
			t.Fatalf("public key: x509 reads an Ed25519 key, keyfile says %v", err)
		}
	})
}

// FuzzEncryptedDump reads arbitrary bytes as a dump encrypted at rest
// (info without an identity reads its header; every reading verb with
// one decrypts it). Properties: no panic; the header reader never says
// more recipients than stanza lines; decryption with an identity the
// bytes were not made for fails, writing nothing.
func FuzzEncryptedDump(f *testing.F) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := age.Encrypt(&buf, id.Recipient())
	w.Write(sealedPack(evidence.Link{}))
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("age-encryption.org/v1\n-> X25519 abc\n--- xyz\n"))
	other, _ := age.GenerateX25519Identity()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "d.pack.age")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if h, err := crypt.ReadHeader(p); err == nil && len(h.Recipients) > bytes.Count(data, []byte("\n-> "))+1 {
			t.Fatalf("%d recipients from %d stanza lines", len(h.Recipients), bytes.Count(data, []byte("\n-> ")))
		}
		var out bytes.Buffer
		if n, err := crypt.Decrypt(p, &out, []age.Identity{other}); err == nil || n != 0 || out.Len() != 0 {
			t.Fatalf("decrypted %d bytes with a foreign identity (err %v)", out.Len(), err)
		}
	})
}
