package keyfile

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/evidence"
)

// opensslKey makes an Ed25519 key pair with openssl (Debian's, on the
// machine) and returns the private and public key files.
func opensslKey(t testing.TB, dir, name string) (priv, pub string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skipf("needs openssl: %v", err)
	}
	priv, pub = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub")
	for _, args := range [][]string{{"genpkey", "-algorithm", "ed25519", "-out", priv}, {"pkey", "-in", priv, "-pubout", "-out", pub}} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	return priv, pub
}

// TestOpenSSLKeys: keys openssl makes load; the key ID is what the
// documented openssl pipeline computes; a keys file of several keys with
// text between them loads; wrong keys are refused naming why.
func TestOpenSSLKeys(t *testing.T) {
	dir := t.TempDir()
	priv, pub := opensslKey(t, dir, "a")
	_, pub2 := opensslKey(t, dir, "b")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := LoadKeys(pub)
	if err != nil {
		t.Fatal(err)
	}
	if ids := k.IDs(); len(ids) != 1 || ids[0] != s.ID() {
		t.Fatalf("public key IDs %v, private %v", ids, s.ID())
	}
	out, err := exec.Command("sh", "-c", "openssl pkey -pubin -in "+pub+" -outform DER | tail -c 32 | sha256sum | cut -c1-16").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != s.ID().String() {
		t.Fatalf("openssl pipeline gives %s, key ID %s", got, s.ID())
	}
	if pem, _ := os.ReadFile(pub); !bytes.Equal(pem, PublicPEM(s)) {
		t.Fatalf("PublicPEM\n%s\nopenssl\n%s", PublicPEM(s), pem)
	}
	if pem, _ := os.ReadFile(priv); !bytes.Equal(pem, PrivatePEM(s)) {
		t.Fatalf("PrivatePEM is not openssl's key file")
	}
	a, _ := os.ReadFile(pub)
	b, _ := os.ReadFile(pub2)
	ring := filepath.Join(dir, "keys.pem")
	os.WriteFile(ring, []byte("# vehicle 1\n"+string(a)+"\nvehicle 2, since 2026-12:\n"+string(b)), 0o644)
	if k, err := LoadKeys(ring); err != nil || k.Len() != 2 {
		t.Fatalf("keys file: %v, %d keys", err, k.Len())
	}
	privBytes, _ := os.ReadFile(priv)
	for name, data := range map[string]string{
		"private in keys": string(privBytes), "nothing": "hello", "rsa-ish": "-----BEGIN RSA PUBLIC KEY-----\nAAAA\n-----END RSA PUBLIC KEY-----\n",
	} {
		if _, err := ParseKeys([]byte(data)); !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseSigner(a); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "public key") {
		t.Errorf("public key as signer: %v", err)
	}
	// An RSA key openssl makes is refused as not Ed25519.
	rsa := filepath.Join(dir, "rsa.pem")
	if out, err := exec.Command("openssl", "genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := LoadSigner(rsa); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "an RSA key, want Ed25519") {
		t.Errorf("rsa: %v", err)
	}
	// Keys of other algorithms openssl makes are named, private and public
	// (keyfile reads the DER itself: no crypto/x509 in the ECU build).
	for _, kind := range []struct{ args, name string }{{"EC -pkeyopt ec_paramgen_curve:P-256", "an ECDSA key"}, {"x25519", "an X25519 key"}, {"ed448", "an Ed448 key"}} {
		k, kp := filepath.Join(dir, "other.pem"), filepath.Join(dir, "other.pub")
		gen := exec.Command("sh", "-c", "openssl genpkey -algorithm "+kind.args+" -out "+k+" && openssl pkey -in "+k+" -pubout -out "+kp)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", kind.args, err, out)
		}
		if _, err := LoadSigner(k); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), kind.name+", want Ed25519") {
			t.Errorf("%s private: %v", kind.args, err)
		}
		if _, err := LoadKeys(kp); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "block 1: "+kind.name+", want Ed25519") {
			t.Errorf("%s public: %v", kind.args, err)
		}
	}
	os.Chmod(priv, 0o644)
	if _, exposed, _ := Exposed(priv); !exposed {
		t.Error("0644 key not exposed")
	}
	os.Chmod(priv, 0o600)
	if _, exposed, _ := Exposed(priv); exposed {
		t.Error("0600 key exposed")
	}
}

// TestSealSignedWithOpenSSLKeyVerifiesWithOpenSSL: the statement a seal
// signs verifies with "openssl pkeyutl -verify -rawin", so an
// investigator needs nothing of edr-lite to check a signature.
func TestSealSignedWithOpenSSLKeyVerifiesWithOpenSSL(t *testing.T) {
	dir := t.TempDir()
	priv, pub := opensslKey(t, dir, "a")
	s, _ := LoadSigner(priv)
	sl := evidence.NewSealer(s, evidence.FormatPack, evidence.Link{Chain: evidence.ChainID{1}, Counter: 1})
	sl.Write([]byte("a dump"))
	seal, err := sl.Finish(6)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "statement"), seal.Statement(), 0o644)
	os.WriteFile(filepath.Join(dir, "sig"), seal.Signature[:], 0o644)
	cmd := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", "statement", "-sigfile", "sig")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl verify: %v\n%s", err, out)
	}
}
