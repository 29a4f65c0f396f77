// Package demo simulates a small vehicle for "edr-lite demo" and the
// end-to-end tests: a speed signal, a brake pedal, an IMU, a camera with large
// frames and a latched calibration topic, with a hard brake a few seconds in.
//
// It is not for: realistic vehicle dynamics. The signals are just plausible
// enough for the shipped hard_brake rule to fire exactly once.
//
// # Caveats
//
// Vehicle.Run publishes from one goroutine; a Publisher is called from that
// goroutine only and must not keep the payload slice.
package demo
