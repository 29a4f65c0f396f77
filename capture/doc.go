// Package capture holds the network sources: a batched UDP receiver and a raw
// AF_PACKET receiver with a mmap'd TPACKET_V3 ring and an eBPF socket filter,
// plus the mapping of packets to topics. Both feed the engine through the
// engine.Sink contract.
//
// It is not for: the engine's internals, or decoding application protocols
// beyond the headers needed to name a topic.
package capture
