// Package crypt encrypts dumps at rest to age recipients and decrypts
// them with age identities (filippo.io/age; docs/evidence.md): an
// encrypted dump is a plain age file (NAME.pack.age, NAME.mcap.age) that
// the age tool decrypts too, its plaintext the dump as it would be
// without encryption (sealed, when signing is on). Nothing stays in clear
// but the age header: the recipients' stanzas (their kinds and count).
//
// It is not for: signing (package evidence), choosing what to encrypt
// (the dump pipeline and the command line), or keys other than age's.
//
// # Caveats
//
// A recipient holds only public keys: a recorder that encrypts cannot
// read its own dumps. Decrypt reads the whole file once (the final chunk
// first, so a cut file fails at once) and holds one 64 KiB chunk at a
// time; the age header is bounded by age to 2 MiB. Safe for concurrent
// use.
package crypt
