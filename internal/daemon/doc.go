// Package daemon wires a running recorder from a configuration: the engine,
// its sources (shared-memory consumers, UDP and raw capture), the Lua rules
// reading its rings, the control socket, HTTP metrics and the dump hooks.
// "edr-lite run" and "edr-lite demo" are thin shells around it. Load and
// Check are the one validation of a configuration: "edr-lite config check"
// and "edr-lite run" both call Load, and New calls Check, so a file the
// check passes is not rejected by run for a reason it could have known.
// Warnings names what passes but will not work as meant (a shared-memory
// directory no producer writes to, HTTP without a token); config check
// prints them and New logs them. Status says per source whether it
// receives and why not (sources.go), and run logs it.
//
// Two builds (docs/ecu.md): the full one wires everything; the ECU build
// (-tags ecu) leaves out the report pages, the Parquet conversion of
// uploads, the demo (build_ecu.go) and the HTTP stack: the HTTP listener
// (http.go), the Prometheus metrics (metrics.go) and the live server
// (live.go), for which nohttp.go stands in and Check refuses their
// settings. -tags ecu,http puts the HTTP stack back (report_ecu.go then
// answers the report pages' paths).
//
// It is not for: any recording logic of its own. Everything it does is
// delegate to engine, shm, capture, scripts and internal/control.
//
// # Caveats
//
// New acquires every fallible resource (rolling back on failure), Start
// starts the goroutines, Stop stops them gracefully. Trigger, Status and
// Reload are safe for concurrent use once Start has returned. Check has no
// lasting side effects: it loads rules and closes them, stats directories
// and interfaces, makes and removes a probe file or directory where run
// would write, and opens and closes each network source's socket and the
// HTTP listener (a port in use is a warning: it may be this recorder's,
// running).
package daemon
