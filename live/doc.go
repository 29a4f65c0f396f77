// Package live serves the recorder's topics while it records, over the
// Foxglove WebSocket protocol (subprotocol foxglove.websocket.v1), so
// Foxglove — or any client of that protocol — shows the live rings:
// is the camera running, is the IMU sane, did the rule's signal move.
//
// In one paragraph: New(rec, Options) makes a Server of an engine.Recorder;
// Serve(ln) accepts WebSocket clients on a listener. Each client gets
// serverInfo (capabilities time and parameters, plus clientPublish when
// Options.Publish is set), an advertisement of every topic as a channel
// (its encoding and schema as recorded; packed structs as JSON with a JSON
// Schema through schema.AsJSON, as the MCAP export offers them), later
// advertisements and unadvertisements as topics come, change type and go,
// Message Data frames stamped with each message's capture time for what it
// subscribes to, and the server's time. A subscription may start with the
// recent history the ring still holds (Options.History, or the
// edr-lite.history_s parameter the client sets), then goes on live with no
// gap and no duplicate. Clients may publish on allowed topics; their
// messages enter the recorder through an ingest.Sink like any source's.
// Status reports every client, per topic, and what each could not take.
// docs/live.md is the user's page.
//
// The recorder comes first: one goroutine (the pump) reads the rings
// through engine.Readers of its own, never on the ingest path and never
// making a writer wait (ARCHITECTURE.md, "Rings"); it copies each message
// once and hands it to every subscribed client's bounded queue. A message
// that does not fit a client's queue is dropped and counted for that client
// and topic, and the client is told in a status message; a client whose
// queue stays full for Options.StallTimeout is disconnected with the
// reason. Clients, subscriptions, request sizes and rates are bounded;
// connections beyond the client limit are closed as they are accepted.
//
// The WebSocket library is github.com/coder/websocket: context-first
// (every read and write is bounded by a context, which is how a stalled
// client is cut off), a read limit per message, safe concurrent writes,
// subprotocol negotiation and origin checks, no dependencies of its own.
//
// It is not for: dump formats or Lua (it knows neither: a message
// published on a trigger topic reaches the daemon through
// Publish.OnMessage), TLS (put a proxy in front), or replaying files.
//
// # Caveats
//
//   - Message Data payloads are shared between the queues of every client
//     subscribed: read only. A Request's Payload aliases the bytes given to
//     ParseRequest.
//   - Clients see a topic's type change within Options.TopicPoll: messages
//     of the new type written before the re-advertisement go out on the old
//     channel.
//   - History is delivered in capture-time order per topic, not merged
//     across topics.
//   - A subscribed topic's ring is pinned by the server's readers (as any
//     engine.Reader pins it): with destroy_on_offline, an offline topic's
//     ring is freed once its last subscription ends.
//   - Counts: for each client and topic, sent + dropped + lost +
//     untranscodable = messages the subscription covered.
//   - Server is safe for concurrent use; Close waits for every client and
//     reader to be gone (a client that takes nothing is cut off within 2 s
//     of its close frame).
package live
