package config

// Evidence is the [evidence] section: signed and chained dumps
// (docs/evidence.md). Off while SignKey is "". internal/daemon.Check reads
// the keys and the key file's mode.
type Evidence struct {
	// SignKey is the Ed25519 private key (PEM, PKCS #8: "openssl genpkey
	// -algorithm ed25519") every dump is signed with; its dumps are
	// chained in the dump directory's ledger.
	SignKey string `toml:"sign_key"`
	// PreviousKeys is a keys file of the public keys of earlier signing
	// keys: the chain goes on from a ledger one of them signed (the key
	// was replaced).
	PreviousKeys string `toml:"previous_keys"`
	// EncryptTo encrypts every dump at rest (age) to these recipients:
	// age1... public keys, or files of them (docs/evidence.md). The
	// recorder holds no identity: it cannot read its own dumps.
	EncryptTo []string `toml:"encrypt_to"`
}
