// Package replay feeds recorded dumps back: to shared memory or UDP with
// timing modes, and through Lua rules in message time so that triggers can be
// regression-tested.
package replay
