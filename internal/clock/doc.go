// Package clock provides the time sources of edr-lite: the system clock, a
// coarse clock cheap enough for hot paths, and a virtual clock for tests and
// replay. All times are int64 nanoseconds since the UNIX epoch.
//
// It is not for: timers or scheduling beyond what tests and replay need.
//
// # Caveats
//
// A Coarse clock lags real time by up to its resolution; use it where a clock
// read per message would not fit the budget. Virtual and Coarse are safe for
// concurrent use.
package clock
