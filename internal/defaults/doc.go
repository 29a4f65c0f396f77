// Package defaults is the one table of edr-lite's default settings: every
// value a user gets when a key is not set — in the configuration file, the
// engine and dump packages' Config structs, the control protocol, Lua's
// rule{} and trigger{} — is written here once and referred to by name
// everywhere else. "edr-lite config init" renders its commented default
// file from these constants (internal/config/default.toml.tmpl), and
// docs/engine.md and the README cite this file.
//
// It is not for: validation (internal/config, engine, dump) or parsing.
// It is a leaf: standard library only.
//
// # Caveats
//
// An unset setting and a zero one differ: an unset window is the default
// below, "0s" is zero. Packages represent "unset" as a nil *time.Duration
// (see engine.Config), never as 0.
package defaults
