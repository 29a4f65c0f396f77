// Package suggest finds, among the names a program knows (configuration
// keys, verbs, flags, rule names), the ones a mistyped name was probably
// meant to be: the "did you mean" of an error.
//
// It is not for: deciding that a name is unknown (the caller knows its
// names), or fuzzy search over large sets (it compares the name with every
// candidate).
//
// # Caveats
//
// The functions are pure and safe for concurrent use. Names are compared
// case-insensitively, with "-" and "_" alike (a flag "--max_memory" is
// "--max-memory"); the cost is O(len(name) * len(candidate)) per
// candidate, and names longer than MaxLen are not compared at all, so a
// hostile name costs no more than MaxLen² per candidate.
package suggest
