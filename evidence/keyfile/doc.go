// Package keyfile reads and writes the key files of package evidence:
// Ed25519 private keys in PEM, PKCS #8 (what "openssl genpkey -algorithm
// ed25519" writes), public keys in PEM (what "openssl pkey -pubout"
// writes), and keys files holding several public keys.
//
// It is not for: signing or checking (package evidence), or keys of other
// algorithms (refused, naming what they are).
//
// # Caveats
//
// It reads the keys' DER itself with encoding/asn1 (Ed25519 only, RFC
// 8410), not with crypto/x509, whose key parsers link RSA and ECDSA (keys
// checked by signing) and the package net: 0.13 MiB the ECU build has no
// room for (docs/ecu.md). The file formats and the dump pipeline take an
// *evidence.Signer and an *evidence.Keyring made here. Files are read
// whole, at most MaxKeyFile bytes. Safe for concurrent use.
package keyfile
