// Package scripts is the Lua room: a sandboxed gopher-lua host that runs
// trigger rules over message streams in message time, and the shipped rules
// in scripts/rules (embedded as Shipped).
//
// A rule file declares itself with rule{...}, reads configuration with
// param(name, default) or the read-only params table, and defines any of
// on_message(m), on_tick(now) and on_dump_finished(d); trigger{...} hands a
// Trigger to Options.OnTrigger, subject to the rule's cooldown and
// max_per_minute. scripts/rules/README.md is the user's reference.
//
// Load or LoadSource gives a *Rule; a Host drives several rules: Feed(m)
// delivers the on_ticks due up to m.TS and then m to every rule whose topic
// globs match; Tick(now) moves time without a message; DumpFinished tells
// rules a dump is written; Reload swaps a rule for a new version of its file
// and keeps the old one when the new one does not load. Status reports
// counters per rule. StartLive runs rules on an engine.Recorder instead: the rules
// take turns on one goroutine (a rule whose turn runs past one to two
// LiveOptions.Detach moves to its own), each reading the rings of its
// topics through its own readers, so Lua cost never reaches ingest. The same messages through the
// same rules give the same
// triggers on any machine and at any replay speed: time inside a rule is
// message time, budgets count VM instructions (not wall time), and
// math.random is seeded per rule.
//
// Sandbox: base without load, loadstring, dofile, loadfile, require,
// module, collectgarbage, getfenv, setfenv, newproxy and print; string
// (without dump), table and math. Each callback gets Budget.Instructions
// VM instructions; strings are capped at Budget.MaxString (".." is checked
// before it allocates; rep, format, gsub, table.concat, m:str and m:bytes
// too); the call stack and value stack are bounded; the state a rule keeps is
// walked and bounded by Budget.Memory. A rule that errs or blows a budget is
// disabled with an error naming file and line; other rules go on.
//
// It is not for: sockets, files or wall-clock time; rules see messages and
// message time only. Wiring triggers to the recorder is the caller's job
// (OnTrigger): this package reads the engine's rings but never calls its
// trigger API.
//
// # Caveats
//
// The message view m is one userdata reused for every message; its methods
// raise an error outside on_message, and a kept view's fields read stale
// values: do not keep it. Message payloads are read in place and never kept.
// Live copies a message's payload out of the recorder's ring only when its
// rule first reads the bytes (an accessor, a field, an event_time field):
// a rule reading m.ts, m.topic, m.seq and m.size copies none; a payload
// the ring overwrote before that read stops the callback there and the
// message counts as skipped (RuleStatus.Skipped), not as an error.
//
// Numbers are Lua numbers (float64): u64/i64 above 2^53 and nanosecond
// times (about 1.8e18) lose precision; at current dates times are exact to
// 256 ns.
//
// A Go library function cannot be interrupted by the instruction budget
// while it runs, so each one whose cost grows with its input charges it:
// string.find, match, gmatch and gsub run on this package's Lua 5.1
// matcher (pattern.go), which counts its steps against the budget and
// stops mid-match when it runs out, and gmatch and gsub find one match at
// a time instead of collecting them all first; copies are charged by
// size; table.insert, remove, sort, maxn, #t over trailing nils and stores
// far past the end of a table's array are charged by the elements they
// touch (the hook in budget.go, arrayLen in frame_unsafe.go). Topic globs
// match in linear time (glob.go).
//
// Within one callback allocation is bounded by the instruction budget
// (each instruction can build at most a bounded amount, or is charged for
// it); the memory budget is checked by walking the state between
// callbacks.
//
// Rule and Host are not safe for concurrent use: one goroutine feeds them.
// Status (on both) is safe from any goroutine. Live is safe for concurrent
// use. Message, Trigger, DumpResult, Decl, Options and Budget are plain
// values. OnTrigger and the Logger run
// on the feeding goroutine inside the callback.
package scripts
