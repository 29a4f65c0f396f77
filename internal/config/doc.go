// Package config reads the edr-lite configuration file (TOML) strictly: an
// unknown key (with a "did you mean" from the keys its table takes), a
// value of the wrong type, a bad size ("256MiB") or a bad duration ("15s")
// is a Problem naming the file, line and key, and every problem of a file
// is reported (Errors), not only the first: the document is parsed into a
// tree (a syntax error on a "key = value" line is reported and the line
// left out), then decoded key by key (decode.go), each key that cannot be
// taken keeping its default. A rule's params take TOML strings, numbers
// and booleans (Params). The file is decoded over the one
// table of defaults (internal/defaults); an optional override (a
// [[topic]] window, a UDP receive buffer) is a pointer, nil when unset, so
// a zero written in the file stays zero. It also renders the fully
// commented default configuration printed by "edr-lite config init" from
// that table (default.toml.tmpl).
// It also reads the checks file of a closed-loop replay ("edr-lite replay
// --checks FILE", TOML or JSON) the same way (ParseChecks).
//
// It is not for: validating what only the packages can validate (a rule's
// params, an interface that does not exist, the recorder's limits); that
// is internal/daemon.Check, which locates its problems in the file through
// File.Problem.
//
// # Caveats
//
// A File is plain data and not safe for concurrent mutation. The line
// index behind File.Problem is a locator for messages, not a parser: a key
// it cannot place gets its table's line, or none.
package config
