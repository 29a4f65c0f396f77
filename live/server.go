package live

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// Options configure a Server. Zero values take the defaults of
// internal/defaults (the [live] section's).
type Options struct {
	// Name is the server's name in serverInfo ("edr-lite" when empty).
	Name string
	// Token, when set, must come with every connection: as the URL's
	// token parameter (ws://host:8765/?token=T, what Foxglove can send)
	// or as "Authorization: Bearer T".
	Token string
	// Origins are the web origins (host patterns, path.Match) whose pages
	// may connect beside the server's own host; a client that sends no
	// Origin (a program, Foxglove's desktop app) is not asked.
	Origins []string
	// MaxClients bounds the clients connected at once; more are refused
	// with HTTP 503 before the upgrade.
	MaxClients int
	// MaxSubscriptions bounds one client's subscriptions.
	MaxSubscriptions int
	// MaxClientMessage bounds one message a client sends; a larger one
	// closes its connection (status 1009).
	MaxClientMessage int64
	// Queue bounds the bytes waiting to be sent to one client (each
	// message counts its payload plus 64 bytes); what does not fit is
	// dropped and counted per client and topic.
	Queue int64
	// StallTimeout is how long a client's queue may stay full (it takes
	// nothing) before the client is disconnected with the reason.
	StallTimeout time.Duration
	// History is what a subscription gets of the past when the client did
	// not set the edr-lite.history_s parameter (0: live messages only).
	History time.Duration
	// Poll is how often the rings are read (5 ms when zero); TopicPoll how
	// often new, changed and gone topics are looked for (500 ms).
	Poll, TopicPoll time.Duration
	// Publish, when not nil, lets clients publish (the clientPublish
	// capability).
	Publish *Publish
	// Logger receives connections, disconnections and their reasons (nil:
	// discarded).
	Logger *slog.Logger
}

// Publish lets clients publish messages into the recorder.
type Publish struct {
	// Sink receives the topics clients advertise (Discover, as
	// MultiProducer topics) and their messages (IngestAt).
	Sink ingest.Sink
	// Topics are globs (path.Match) of the topic names clients may publish
	// on.
	Topics []string
	// OnMessage, when set, is called after each published message was
	// handed to Sink, with its capture time, on the publishing client's
	// goroutine; data is valid only during the call.
	OnMessage func(topic string, captureNs int64, data []byte)
	// MaxChannels bounds the channels one client advertises (64 when 0).
	MaxChannels int
}

func (o *Options) setDefaults() {
	if o.Name == "" {
		o.Name = "edr-lite"
	}
	if o.MaxClients <= 0 {
		o.MaxClients = defaults.LiveMaxClients
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = defaults.LiveMaxSubscriptions
	}
	if o.MaxClientMessage <= 0 {
		o.MaxClientMessage = defaults.LiveMaxClientMessage
	}
	if o.Queue <= 0 {
		o.Queue = defaults.LiveQueue
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = defaults.LiveStallTimeout
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.TopicPoll <= 0 {
		o.TopicPoll = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Publish != nil && o.Publish.MaxChannels <= 0 {
		o.Publish.MaxChannels = 64
	}
}

// Fixed limits of the server (docs/live.md).
const (
	// handshakeSlack is how many connections beyond MaxClients may be open
	// at once (handshakes in progress, refusals being written); more are
	// closed as soon as they are accepted.
	handshakeSlack = 16
	// handshakeTimeout bounds the HTTP request of the upgrade.
	handshakeTimeout = 5 * time.Second
	// pingInterval and pingTimeout find dead peers.
	pingInterval = 20 * time.Second
	pingTimeout  = 20 * time.Second
	// requestRate and requestBurst bound the JSON requests a client sends
	// per second; more are answered with an error.
	requestRate  = 200
	requestBurst = 1000
	// maxProtocolErrors: a client that sent this many bad requests is
	// disconnected.
	maxProtocolErrors = 100
	// timeInterval is how often clients get the server's time.
	timeInterval = 100 * time.Millisecond
	// tellInterval is how often a client is told what it lost.
	tellInterval = time.Second
	// maxRecent is how many disconnected clients Status remembers.
	maxRecent = 16
)

// Disconnect reasons (ClientStatus.Reason, Status.Disconnects).
const (
	ReasonClosed       = "closed_by_client"
	ReasonStalled      = "queue_full"
	ReasonWrite        = "write_failed"
	ReasonTooBig       = "message_too_big"
	ReasonErrors       = "protocol_errors"
	ReasonControlFull  = "control_queue_full"
	ReasonPing         = "ping_timeout"
	ReasonServerClosed = "server_stopped"
	ReasonRead         = "read_failed"
)

// Server serves the recorder's rings over the Foxglove WebSocket protocol.
// New, Serve, Status and Close are safe for concurrent use.
type Server struct {
	rec     *engine.Recorder
	opts    Options
	log     *slog.Logger
	session string
	pub     *publisher

	reqs chan request // to the pump
	done chan struct{}
	wg   sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	clients     map[uint64]*client
	nextID      uint64
	servers     []*http.Server
	totals      map[string]*TopicStatus // per topic, clients gone
	recent      []ClientStatus          // disconnected, newest last
	disconnects map[string]uint64

	accepted, refusedFull, refusedConns, unauthorized, badHandshakes atomic.Uint64
}

// New returns a server of rec's topics; Serve starts serving.
func New(rec *engine.Recorder, opts Options) (*Server, error) {
	if rec == nil {
		return nil, errors.New("live: no recorder")
	}
	opts.setDefaults()
	s := &Server{rec: rec, opts: opts, log: opts.Logger, session: strconv.FormatInt(time.Now().UnixNano(), 10),
		reqs: make(chan request, 256), done: make(chan struct{}), clients: map[uint64]*client{},
		totals: map[string]*TopicStatus{}, disconnects: map[string]uint64{}}
	if opts.Publish != nil {
		if opts.Publish.Sink == nil {
			return nil, errors.New("live: Publish without a Sink")
		}
		s.pub = newPublisher(opts.Publish)
	}
	p := newPump(s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.run()
	}()
	return s, nil
}

// Serve accepts connections on ln until Close (then it returns nil).
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: handshakeTimeout, MaxHeaderBytes: 16 << 10,
		ErrorLog: log.New(io.Discard, "", 0)}
	hs.SetKeepAlivesEnabled(false) // a refused or failed handshake closes its connection
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.servers = append(s.servers, hs)
	s.mu.Unlock()
	err := hs.Serve(newConnLimit(ln, s.opts.MaxClients+handshakeSlack, &s.refusedConns))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving: listeners close, every client is disconnected
// (reason server_stopped), the rings' readers are released. It is
// idempotent and waits for every goroutine of the server.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	servers := s.servers
	cs := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		if c.conn != nil { // the others see closed once their upgrade is done
			cs = append(cs, c)
		}
	}
	s.mu.Unlock()
	for _, hs := range servers {
		hs.Close()
	}
	for _, c := range cs {
		c.disconnect(ReasonServerClosed, websocket.StatusGoingAway, "recorder stopping")
	}
	close(s.done)
	s.wg.Wait()
	return nil
}

// ServeHTTP upgrades a request of "/" to a WebSocket client.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		s.badHandshakes.Add(1)
		http.Error(w, "not found: connect to / with the foxglove.websocket.v1 subprotocol", http.StatusNotFound)
		return
	}
	if tok := s.opts.Token; tok != "" && !tokenOK(r, tok) {
		s.unauthorized.Add(1)
		http.Error(w, "unauthorized: add ?token=<live.token> to the URL, or send Authorization: Bearer <live.token>", http.StatusUnauthorized)
		return
	}
	if !offers(r, Subprotocol) {
		s.badHandshakes.Add(1)
		http.Error(w, "bad request: a WebSocket upgrade offering the subprotocol "+Subprotocol+" is required", http.StatusBadRequest)
		return
	}
	c, ok := s.admit(r)
	if !ok {
		s.refusedFull.Add(1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many clients: %d connected (live.max_clients)", s.opts.MaxClients), http.StatusServiceUnavailable)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, OriginPatterns: s.opts.Origins})
	if err != nil {
		s.badHandshakes.Add(1)
		s.release(c, "", nil)
		s.wg.Done()
		return
	}
	conn.SetReadLimit(s.opts.MaxClientMessage)
	s.mu.Lock()
	c.conn = conn
	closed := s.closed
	s.mu.Unlock()
	if closed {
		conn.Close(websocket.StatusGoingAway, "recorder stopping")
		s.release(c, "", nil)
		s.wg.Done()
		return
	}
	s.accepted.Add(1)
	s.log.Info("live client connected", "client", c.id, "remote", c.remote)
	c.run() // returns when the client is gone
}

// tokenOK checks the token of a request: ?token= or a bearer token.
func tokenOK(r *http.Request, tok string) bool {
	got := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); got == "" && strings.HasPrefix(h, "Bearer ") {
		got = strings.TrimPrefix(h, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
}

// offers reports whether the request asks for the subprotocol p.
func offers(r *http.Request, p string) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, v := range strings.Split(h, ",") {
			if strings.EqualFold(strings.TrimSpace(v), p) {
				return true
			}
		}
	}
	return false
}

// admit reserves a client slot, or refuses when MaxClients are connected.
func (s *Server) admit(r *http.Request) (*client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.clients) >= s.opts.MaxClients {
		return nil, false
	}
	s.nextID++
	c := newClient(s, s.nextID, r.RemoteAddr)
	c.history.Store(int64(s.opts.History))
	s.clients[c.id] = c
	return c, true
}

// release forgets a client that has gone, keeping its figures.
func (s *Server) release(c *client, reason string, st *ClientStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, c.id)
	if st == nil {
		return
	}
	s.disconnects[reason]++
	for _, t := range st.Topics {
		tot := s.totals[t.Topic]
		if tot == nil {
			tot = &TopicStatus{Topic: t.Topic}
			s.totals[t.Topic] = tot
		}
		tot.add(t)
	}
	s.recent = append(s.recent, *st)
	if len(s.recent) > maxRecent {
		s.recent = append(s.recent[:0], s.recent[len(s.recent)-maxRecent:]...)
	}
}

// toPump hands a request to the pump; false when the client or the
// server is going.
func (s *Server) toPump(ctx context.Context, r request) bool {
	select {
	case s.reqs <- r:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// connLimit is a listener that keeps at most n connections open: more are
// closed as soon as they are accepted (counted), so a flood of idle
// connections costs the recorder no descriptors and no goroutines.
type connLimit struct {
	net.Listener
	open    atomic.Int64
	n       int64
	refused *atomic.Uint64
}

func newConnLimit(ln net.Listener, n int, refused *atomic.Uint64) *connLimit {
	return &connLimit{Listener: ln, n: int64(n), refused: refused}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.n {
			l.open.Add(-1)
			l.refused.Add(1)
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
