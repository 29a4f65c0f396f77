package dumpinfo

// Provenance says what a dump was made from and by which verb, stored as
// JSON under evidence.ProvenanceName (docs/evidence.md): recover, filter,
// split, merge, compress and export write it. A dump the recorder wrote
// has none.
type Provenance struct {
	// MadeBy is the verb that made the file ("edr-lite filter").
	MadeBy string `json:"made_by"`
	// Sources are the files it was made from, as they were then.
	Sources []Source `json:"sources"`
	// SignedBy is the key ID of the operator's key that signed the file
	// (--sign-key), "" when unsigned.
	SignedBy string `json:"signed_by,omitempty"`
}

// Source is one file a dump was made from: its name, size and SHA-256
// (of every byte), and its signature as the verb found it.
type Source struct {
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Signature is "valid", "invalid", "unsigned", "unknown key" or "not
	// checked" (no public key given: a seal's digest matched); Reason
	// says why for all but valid and unsigned.
	Signature string `json:"signature"`
	Reason    string `json:"reason,omitempty"`
	// KeyID, Seal, Chain and Counter are the source's seal's: the key
	// that signed it, the seal's ID, its chain and its place there.
	KeyID   string `json:"key_id,omitempty"`
	Seal    string `json:"seal,omitempty"`
	Chain   string `json:"chain,omitempty"`
	Counter uint64 `json:"counter,omitempty"`
}
