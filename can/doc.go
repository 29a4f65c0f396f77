// Package can records vehicle buses: CAN and CAN FD frames as typed
// messages, read from SocketCAN, from CAN-over-Ethernet capture modules
// and from candump logs and Vector ASC files, and decoded by DBC into one
// typed topic per DBC message.
//
// In one paragraph: a Frame is one CAN or CAN FD frame (identifier, flags,
// DLC, data); Encode and Decode give its encoding, a packed struct typed
// FrameType (16 bytes) or FDFrameType (72 bytes), so every reader of typed
// topics (cat --decode, the report, the MCAP export, Lua) shows it. A Bus
// is the shared frame path: NewBus discovers the bus's topics on an
// ingest.Sink, Record records a frame there (error frames on a topic of
// their own, per-ID topics with PerID) and, with a DBC, the decoded
// message on the message's topic; Lost and Stats do the accounting. The
// sources feed Buses: NewSocketCAN (CAN_RAW), EthDecoder (ASAM CMP and
// TECMP frames a raw capture hands it: ParseCMP, ParseTECMP), LogSource (a
// candump log as it is written). CandumpReader / AppendCandump and
// ASCReader / ASCWriter read and write log files (every bad line a
// *LineError with its line and column). ParseDBC parses a DBC file with
// go.einride.tech/can and compiles each Message to a decoder and a
// packed-struct type; DBC.Match says what a DBC makes of a frame (decoded,
// an unknown ID, too short) for every decoding alike, and a Tally counts
// it for a dump's accounting (dumpinfo.CANAccount). docs/can.md is the user's reference: sources, the
// encoding, DBC support and its limits.
//
// It is not for: the recorder's internals or the dump formats (sources
// feed ingest.Sink; dumpfile reads and writes the log files
// through this package), sending frames, or ISO-TP / J1939 reassembly.
//
// # Caveats
//
//   - Concurrency: a Bus is written from one goroutine (its source's):
//     Record and Lost; Stats may be called from any goroutine; Close once
//     the source has stopped.
//   - Aliasing: Record copies the frame into the sink; Frame.Payload
//     aliases the Frame.
//   - Untrusted input: log lines are bounded (MaxLineBytes), CMP/TECMP
//     lengths are checked against the bytes that hold them (ErrEth names
//     the offset), a DBC is bounded (32 MiB) and its parser's panics are
//     recovered; a Bus creates at most MaxIDTopics per-ID topics and an
//     EthDecoder at most EthOptions.MaxBuses buses.
//   - A bus topic is classic (16 bytes a frame) until its first CAN FD
//     frame, from which on it is a CAN FD topic (72 bytes a frame): the
//     recorder keeps the type change, so a dump spanning it has both.
package can
