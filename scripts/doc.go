// Package scripts is the Lua room: a sandboxed gopher-lua host that runs
// trigger rules over message streams in message time, and the shipped rules
// in scripts/rules.
//
// It is not for: sockets or files; rules see messages and time only.
package scripts
