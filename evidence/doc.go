// Package evidence makes dumps evidence: it signs them, chains them, and
// checks both (docs/evidence.md).
//
// In one paragraph: a Signer holds an Ed25519 private key (PEM, PKCS #8,
// as openssl writes it; LoadSigner), a Keyring the public keys a reader
// trusts (LoadKeys: one or more PEM public keys in a file). A file's
// writer (pack.WriterOptions.Seal, mcap.Options.Seal) feeds a Sealer
// every byte it writes, marking and going back where it takes a
// provisional record back, and asks it at the end for the Seal: the
// SHA-256 of the file's bytes but the seal record's, how many, where the
// seal lies, the key's ID, the dump's chain Link, and the signature over
// all of that (Statement). Readers find a file's seal and hash what it
// covers (pack.FindSeal, mcap.FindSeal: a Found), and Judge says whether
// it holds. A Chain (the recorder's, per dump directory) gives each dump
// its Link (counter and previous seal ID) and keeps a signed Ledger of
// the chain's dumps, the rotated ones marked as such; CheckChain checks a
// directory's dumps against it.
//
// It is not for: encrypting dumps (age, in evidence/crypt and the
// writers' output), reading file formats (pack and mcap find their own
// seals), or deciding what to sign (the dump pipeline and the command
// line).
//
// # Caveats
//
// A Hasher and a Sealer are for one file and one goroutine (with Async,
// the Hasher hashes lent frames on a worker goroutine of its own, one job
// behind the writer; Sum, Back and Wait wait for it). Judge and
// CheckChain read only what they are given. A Chain is safe for
// concurrent use and writes its ledger (fsync, rename, directory fsync)
// at every change: one small file write per dump and per rotation. A key
// on the recorder's disk can be stolen: whoever holds it can make seals
// and ledgers the checks accept (docs/evidence.md, threat model).
package evidence
