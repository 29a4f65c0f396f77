// Package daemon wires a running recorder from a configuration: the engine,
// its sources (shared-memory consumers, UDP and raw capture), the Lua rules
// reading its rings, the control socket, HTTP metrics and the dump hooks.
// "edr-lite run" and "edr-lite demo" are thin shells around it. Load and
// Check are the one validation of a configuration: "edr-lite config check"
// and "edr-lite run" both call Load, and New calls Check, so a file the
// check passes is not rejected by run for a reason it could have known.
//
// It is not for: any recording logic of its own. Everything it does is
// delegate to engine, shm, capture, scripts and internal/control.
//
// # Caveats
//
// New acquires every fallible resource (rolling back on failure), Start
// starts the goroutines, Stop stops them gracefully. Trigger, Status and
// Reload are safe for concurrent use once Start has returned. Check has no
// side effects: it loads rules and closes them, stats directories and
// interfaces, and binds nothing (a port in use is found by New).
package daemon
