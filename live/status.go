package live

import (
	"sort"
	"strconv"
)

// Status is the server's state: the clients connected, what each was sent
// and could not take, per topic, and what the server refused.
type Status struct {
	// Connected is how many clients are connected; Clients says what
	// each was sent and lost, per topic.
	Connected int            `json:"connected"`
	Clients   []ClientStatus `json:"clients"`
	// Accepted counts WebSocket clients accepted since the start.
	Accepted uint64 `json:"accepted"`
	// RefusedMaxClients counts upgrades refused because max_clients were
	// connected; RefusedConnections connections closed on accept beyond
	// max_clients + 16 open; Unauthorized requests without the token;
	// BadHandshakes requests that were not a WebSocket upgrade to / with
	// the foxglove.websocket.v1 subprotocol (or from an origin not
	// allowed).
	RefusedMaxClients  uint64 `json:"refused_max_clients"`
	RefusedConnections uint64 `json:"refused_connections"`
	Unauthorized       uint64 `json:"unauthorized"`
	BadHandshakes      uint64 `json:"bad_handshakes"`
	// Disconnects counts clients gone, by reason (closed_by_client,
	// queue_full, write_failed, message_too_big, protocol_errors,
	// control_queue_full, ping_timeout, read_failed, server_stopped).
	Disconnects map[string]uint64 `json:"disconnects"`
	// Topics sums, per topic, what every client (connected or gone) was
	// sent and lost.
	Topics []TopicStatus `json:"topics"`
	// RecentDisconnects are the last clients gone, with their reasons.
	RecentDisconnects []ClientStatus `json:"recent_disconnects"`
	// Published counts messages clients published into the recorder.
	Published uint64 `json:"published"`
}

// ClientStatus is one client's figures.
type ClientStatus struct {
	ID            uint64  `json:"id"`
	Remote        string  `json:"remote"`
	ConnectedS    float64 `json:"connected_s"`
	Subscriptions int     `json:"subscriptions"`
	// HistoryS is the history its next subscriptions get.
	HistoryS float64 `json:"history_s"`
	// QueueBytes is what waits to be sent now, QueuePeakBytes the most
	// that ever waited; both at most QueueLimitBytes plus one message.
	QueueBytes      int64 `json:"queue_bytes"`
	QueuePeakBytes  int64 `json:"queue_peak_bytes"`
	QueueLimitBytes int64 `json:"queue_limit_bytes"`
	// Sent, Dropped, Lost and Untranscodable sum Topics.
	Sent           uint64 `json:"sent"`
	Dropped        uint64 `json:"dropped"`
	Lost           uint64 `json:"lost"`
	Untranscodable uint64 `json:"untranscodable"`
	ProtocolErrors uint64 `json:"protocol_errors"`
	Published      uint64 `json:"published"`
	// Reason and Detail say why the client was disconnected (recent
	// disconnects; empty while connected).
	Reason string        `json:"reason,omitempty"`
	Detail string        `json:"detail,omitempty"`
	Topics []TopicStatus `json:"topics"`
}

// TopicStatus is what one client (or every client) was sent of a topic and
// what it did not get: Dropped, its queue was full; Lost, the ring
// overwrote the messages before the server read them; Untranscodable,
// packed messages too short for their layout.
type TopicStatus struct {
	Topic          string `json:"topic"`
	Sent           uint64 `json:"sent"`
	Dropped        uint64 `json:"dropped"`
	Lost           uint64 `json:"lost"`
	Untranscodable uint64 `json:"untranscodable"`
}

func (t *TopicStatus) add(u TopicStatus) {
	t.Sent += u.Sent
	t.Dropped += u.Dropped
	t.Lost += u.Lost
	t.Untranscodable += u.Untranscodable
}

// Status returns a snapshot of the server.
func (s *Server) Status() Status {
	s.mu.Lock()
	cs := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		if c.conn != nil {
			cs = append(cs, c)
		}
	}
	totals := map[string]*TopicStatus{}
	for k, v := range s.totals {
		t := *v
		totals[k] = &t
	}
	st := Status{Disconnects: map[string]uint64{}, RecentDisconnects: append([]ClientStatus(nil), s.recent...)}
	for k, v := range s.disconnects {
		st.Disconnects[k] = v
	}
	s.mu.Unlock()
	if st.RecentDisconnects == nil {
		st.RecentDisconnects = []ClientStatus{}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	st.Clients = make([]ClientStatus, 0, len(cs))
	for _, c := range cs {
		cst := c.status()
		st.Clients = append(st.Clients, cst)
		for _, t := range cst.Topics {
			tot := totals[t.Topic]
			if tot == nil {
				tot = &TopicStatus{Topic: t.Topic}
				totals[t.Topic] = tot
			}
			tot.add(t)
		}
	}
	st.Connected = len(st.Clients)
	st.Topics = make([]TopicStatus, 0, len(totals))
	for _, t := range totals {
		st.Topics = append(st.Topics, *t)
	}
	sort.Slice(st.Topics, func(i, j int) bool { return st.Topics[i].Topic < st.Topics[j].Topic })
	st.Accepted, st.RefusedMaxClients, st.RefusedConnections = s.accepted.Load(), s.refusedFull.Load(), s.refusedConns.Load()
	st.Unauthorized, st.BadHandshakes = s.unauthorized.Load(), s.badHandshakes.Load()
	if s.pub != nil {
		st.Published = s.pub.count.Load()
	}
	return st
}

// serverInfo is the serverInfo message: the capabilities this server has
// (time and parameters always, clientPublish when enabled).
func (s *Server) serverInfo() []byte {
	m := serverInfoMsg{Op: "serverInfo", Name: s.opts.Name, Capabilities: []string{CapTime, CapParameters},
		SessionID: s.session, Metadata: map[string]string{
			"history_s":         strconv.FormatFloat(s.opts.History.Seconds(), 'f', -1, 64),
			"max_subscriptions": strconv.Itoa(s.opts.MaxSubscriptions),
			"queue_bytes":       strconv.FormatInt(s.opts.Queue, 10),
		}}
	if s.pub != nil {
		m.Capabilities = append(m.Capabilities, CapClientPublish)
		m.SupportedEncodings = publishEncodings
	}
	return mustJSON(m)
}
