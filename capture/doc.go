// Package capture holds the network sources of edr-lite: a batched UDP
// receiver and a raw AF_PACKET receiver with a mmap'd TPACKET_V3 ring and an
// eBPF socket filter, plus the mapping of packets to topics. Both feed the
// engine through the ingest.Sink contract.
//
// The whole API: NewUDP(UDPOptions, sink) or NewRaw(RawOptions, sink) opens
// and configures the socket (bind, multicast join, receive buffer; or ring,
// filter, promiscuous mode) and returns a source; Run(ctx) receives until
// ctx ends or Close is called; Stats() reports counters, losses included.
// Each packet is named by a Template ("udp/{dport}", "someip/{dport}",
// "udp/{dst}:{dport}", "eth/{ethertype}", "udp/{src}:{sport}" or a fixed
// name); the first packet of a new name calls Sink.Discover, later ones
// find their topic id in a map keyed by a string-free struct, without
// allocating. ParseFrame and ParseIP are the bounds-checked header parsers
// both sources use; a Filter describes what the raw source's kernel filter
// lets through. ProbeUDP and ProbeRaw open and close what NewUDP and
// NewRaw would open (reading nothing), so that a checker finds beforehand
// an address on no interface, a port in use or a missing capability.
//
// Both sources stamp each packet with the kernel's receive time: the UDP
// source asks for SO_TIMESTAMPNS (falling back, on a kernel without it, to
// one Sink.Now() reading taken after each recvmmsg batch returned, so never
// earlier than the packet's arrival), the raw source reads TPACKET's. A
// source's clock reading or timestamp is never older than the packet:
// a coarse clock refreshed by a goroutine would be, whenever that goroutine
// is descheduled. Neither source knows a producer time: genNs is 0.
//
// It is not for: the engine's internals, decoding application protocols
// beyond the headers needed to name a topic, reassembling IP fragments, or
// sending.
//
// # Caveats
//
// Aliasing: the payload handed to Sink.IngestAt points into the source's
// receive buffer or the kernel's ring and is valid only during the call;
// the sink copies it. A Packet's Frame and Payload alias what it was parsed
// from.
//
// Concurrency: a source's Run owns its buffers and its topic mapping; one
// Run at a time per source. Stats and Close may be called from any
// goroutine; Close waits for Run to return, then reports every topic the
// source discovered offline. Each topic is written from one goroutine, so
// two sources that could produce the same topic name must set different
// Options.Channel values (or the sink must have discovered the topic with
// MultiProducer).
//
// Losses are counts, not errors: datagrams the kernel dropped for a full
// socket buffer (SO_RXQ_OVFL, learnt from the next datagram that gets
// through), frames the ring had no room for (PACKET_STATISTICS, read by
// Stats and Close), oversize, malformed and unmapped packets. When a UDP
// socket feeds one topic (its template uses none of {src}, {sport},
// {dst}, {ethertype}), its kernel drops are also that topic's losses:
// reported with ingest.Sink.Lost, so they appear in the recorder's
// per-topic counters and in the accounting of the dump whose window holds
// them. Otherwise, and for the raw source, the kernel does not say whose
// packets it dropped, and the drops stay the source's (Stats.Lost). MaxTopics
// bounds the topics one source creates, so hostile traffic cannot grow the
// topic table.
//
// The raw source records frames as the kernel delivers them: a VLAN tag the
// NIC (or veth) stripped is not in the recorded bytes, though it still
// names topics ({vlan}) and drives the filter. The filter does not follow
// IPv6 extension headers (ParseFrame does). Loading the filter needs
// CAP_BPF or root; on kernels before 5.11 also a large enough
// RLIMIT_MEMLOCK. NewRaw needs CAP_NET_RAW.
//
// # Performance
//
// Figures, with the commands that reproduce them and why plain UDP
// cannot reach twice a ReadFrom loop here, are in docs/performance.md.
package capture
