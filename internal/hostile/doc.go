// Package hostile generates the crafted input files that every offline verb
// is tried on (cmd/edr-lite's TestHostileInputs) and that seed the fuzz
// targets: compression bombs, lengths and counts that lie, records that
// point at themselves, truncations, and files of many tiny sections,
// frames, topics or chunks. Each Case says what it claims and what the
// verbs must make of it (Valid, Refused, Damaged). The files are generated
// on the fly, the same bytes every time; none is checked in.
//
// It is not for: fuzzing itself (package fuzz), or testing one reader's
// errors in detail (the packages' own tests do).
//
// # Caveats
//
// Some cases are tens of MB (the point is what a small or moderate file
// can make a reader do); Case.Small picks those fit to be fuzz seeds.
// Bytes generates a case anew on each call.
package hostile
