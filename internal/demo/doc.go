// Package demo simulates a small vehicle for "edr-lite demo" and the
// end-to-end tests: a speed signal, a brake pedal, an IMU (packed structs,
// their layouts in Topics), a camera (foxglove.CompressedImage with JPEG
// frames of a synthetic road, drawn and encoded per frame) and a latched
// calibration topic (JSON with a JSON Schema), with a hard brake a few
// seconds in. Each Topic carries the type its producer declares. With
// --can, a CAN bus too (can.go): CANTopic's payloads are candump lines of
// the frames of the shipped DBC (VehicleDBC).
//
// It is not for: realistic vehicle dynamics. The signals are just plausible
// enough for the shipped hard_brake rule to fire exactly once.
//
// # Caveats
//
// Vehicle.Run publishes from one goroutine; a Publisher is called from that
// goroutine only and must not keep the payload slice. Payload is safe for
// concurrent use; a camera frame costs about 2 ms of CPU and allocates.
package demo
