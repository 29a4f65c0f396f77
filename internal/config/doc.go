// Package config reads the edr-lite configuration file (TOML) strictly: an
// unknown key, a bad size ("256MiB") or a bad duration ("15s") is an error
// naming the key and its line. It also renders the fully commented default
// configuration printed by "edr-lite config init", and reads the checks
// file of a closed-loop replay ("edr-lite replay --checks FILE", TOML or
// JSON) the same way (ParseChecks).
//
// It is not for: validating what only the packages can validate (a glob the
// engine rejects, an interface that does not exist); those errors come from
// the packages when the recorder is built.
//
// # Caveats
//
// A File is plain data and not safe for concurrent mutation.
package config
