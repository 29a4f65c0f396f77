package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/internal/units"
)

// closeGrace is how long a disconnected client is given to take the close
// frame with the reason before its connection is cut.
const closeGrace = 2 * time.Second

// topicCounts are one client's figures for one topic.
type topicCounts struct {
	topic                               string
	sent, dropped, lost, untranscodable atomic.Uint64
	told                                uint64 // what the client was last told it lost (pump only)
}

func (t *topicCounts) status() TopicStatus {
	return TopicStatus{Topic: t.topic, Sent: t.sent.Load(), Dropped: t.dropped.Load(), Lost: t.lost.Load(),
		Untranscodable: t.untranscodable.Load()}
}

// client is one connected WebSocket client: its reader (this goroutine,
// run), its writer and its pinger.
type client struct {
	s       *Server
	id      uint64
	remote  string
	since   time.Time
	conn    *websocket.Conn
	ctx     context.Context
	cancel  context.CancelFunc
	q       *queue
	history atomic.Int64 // ns of history a new subscription asks for
	nsubs   atomic.Int64
	writing atomic.Bool // the writer is in a Write

	mu        sync.Mutex
	topics    map[string]*topicCounts
	reason    string
	detail    string
	closeOnce sync.Once

	errs      atomic.Uint64
	published atomic.Uint64

	// reader goroutine only
	pubChans map[uint32]*pubChannel
	tokens   float64
	tokensAt time.Time

	wg sync.WaitGroup
}

func newClient(s *Server, id uint64, remote string) *client {
	c := &client{s: s, id: id, remote: remote, since: time.Now(), q: newQueue(s.opts.Queue),
		topics: map[string]*topicCounts{}, pubChans: map[uint32]*pubChannel{}, tokens: requestBurst}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	s.wg.Add(1) // Done by run, or by ServeHTTP when the upgrade fails
	return c
}

// counts returns the client's counters of topic, created on first use.
func (c *client) counts(topic string) *topicCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.topics[topic]
	if t == nil {
		t = &topicCounts{topic: topic}
		c.topics[topic] = t
	}
	return t
}

// run serves the client until it goes, then releases it.
func (c *client) run() {
	defer c.s.wg.Done()
	c.text(c.s.serverInfo())
	if !c.s.toPump(c.ctx, request{kind: reqJoin, c: c}) {
		c.disconnect(ReasonServerClosed, websocket.StatusGoingAway, "recorder stopping")
	}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.writeLoop() }()
	go func() { defer c.wg.Done(); c.pingLoop() }()
	c.readLoop()
	c.cancel()
	c.conn.CloseNow()
	// The connection is closed: a disconnect from now on (Close, the
	// pump) has no close frame to send and must start no closer, whose
	// c.wg.Add would race the Wait below. Do returns once a disconnect
	// already under way has added its closer.
	c.closeOnce.Do(func() {})
	c.wg.Wait()
	c.q.close()
	if c.s.pub != nil {
		c.s.pub.releaseAll(c)
	}
	select { // the pump forgets the client's subscriptions and readers
	case c.s.reqs <- request{kind: reqLeave, c: c}:
	case <-c.s.done:
	}
	st := c.status()
	if st.Reason == "" {
		st.Reason = ReasonClosed
	}
	c.s.log.Info("live client disconnected", "client", c.id, "remote", c.remote, "reason", st.Reason, "detail", st.Detail,
		"sent", st.Sent, "dropped", st.Dropped, "lost", st.Lost)
	c.s.release(c, st.Reason, &st)
}

// setReason records why the client goes (the first reason wins).
func (c *client) setReason(reason, detail string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason, c.detail = reason, detail
	}
	c.mu.Unlock()
}

// disconnect ends the client with a close frame carrying text (at most
// 123 bytes), or cuts the connection if the frame cannot go out within
// closeGrace. The queue is closed at once: nothing more is sent.
func (c *client) disconnect(reason string, code websocket.StatusCode, text string) {
	c.setReason(reason, text)
	c.q.close()
	c.closeOnce.Do(func() {
		if len(text) > 123 {
			text = text[:123]
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			done := make(chan struct{})
			go func() { c.conn.Close(code, text); close(done) }()
			t := time.NewTimer(closeGrace)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				c.cancel() // cuts the connection: the reader's Read ends
				<-done
			}
		}()
	})
}

// text queues a JSON message; a client that lets too many pile up is
// disconnected.
func (c *client) text(b []byte) {
	if !c.q.offerText(b) {
		c.disconnect(ReasonControlFull, websocket.StatusPolicyViolation, "too slow: more than 64MiB of control messages unread")
	}
}

// statusMsg sends a status message (level, text, optional id).
func (c *client) statusMsg(level int, id, format string, args ...any) {
	c.text(mustJSON(statusMsg{Op: "status", Level: level, Message: fmt.Sprintf(format, args...), ID: id}))
}

// protoErr answers a bad request with an error status; past
// maxProtocolErrors the client is disconnected.
func (c *client) protoErr(format string, args ...any) {
	n := c.errs.Add(1)
	if n >= maxProtocolErrors {
		c.disconnect(ReasonErrors, websocket.StatusPolicyViolation, fmt.Sprintf("%d bad requests", n))
		return
	}
	c.statusMsg(LevelError, "", format, args...)
}

func (c *client) readLoop() {
	for {
		typ, b, err := c.conn.Read(c.ctx)
		if err != nil {
			switch {
			case errors.Is(err, websocket.ErrMessageTooBig):
				c.setReason(ReasonTooBig, fmt.Sprintf("a message larger than %s (live.max_client_message)", units.FormatSize(c.s.opts.MaxClientMessage)))
			case websocket.CloseStatus(err) != -1:
				c.setReason(ReasonClosed, "")
			default:
				c.setReason(ReasonRead, err.Error())
			}
			return
		}
		c.handle(typ == websocket.MessageText, b)
	}
}

// allow takes a token of the request rate limit.
func (c *client) allow() bool {
	now := time.Now()
	if !c.tokensAt.IsZero() {
		c.tokens = min(requestBurst, c.tokens+now.Sub(c.tokensAt).Seconds()*requestRate)
	}
	c.tokensAt = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// notSupported are the protocol's ops of capabilities this server does
// not declare.
var notSupported = map[string]string{
	"subscribeParameterUpdates": "parametersSubscribe", "unsubscribeParameterUpdates": "parametersSubscribe",
	"subscribeConnectionGraph": "connectionGraph", "unsubscribeConnectionGraph": "connectionGraph",
	"fetchAsset": "assets", "serviceCall": "services",
}

// handle serves one message of the client.
func (c *client) handle(text bool, b []byte) {
	if text && !c.allow() {
		c.protoErr("request refused: more than %d requests per second", requestRate)
		return
	}
	r, err := ParseRequest(text, b)
	if err != nil {
		c.protoErr("%v", strings.TrimPrefix(err.Error(), "live: "))
		return
	}
	switch r.Op {
	case "subscribe", "unsubscribe":
		kind := reqSubscribe
		if r.Op == "unsubscribe" {
			kind = reqUnsubscribe
		}
		c.s.toPump(c.ctx, request{kind: kind, c: c, subs: r.Subscriptions, ids: r.IDs})
	case "advertise", "unadvertise", "message":
		if c.s.pub == nil {
			c.protoErr("%s refused: this recorder does not take published messages (live.client_publish is off)", r.Op)
			return
		}
		switch r.Op {
		case "advertise":
			c.s.pub.advertise(c, r.Channels)
		case "unadvertise":
			c.s.pub.unadvertise(c, r.IDs)
		default:
			c.s.pub.message(c, r.ChannelID, r.Payload)
		}
	case "getParameters":
		c.sendParams(r.RequestID)
	case "setParameters":
		for _, p := range r.Params {
			if p.Name != ParamHistory {
				c.protoErr("unknown parameter %q (this server has %s)", p.Name, ParamHistory)
				continue
			}
			v := p.Value
			if p.Unset {
				v = c.s.opts.History.Seconds()
			}
			if v < 0 || v > maxHistory.Seconds() {
				c.protoErr("%s = %v: want 0 to %v seconds", ParamHistory, v, maxHistory.Seconds())
				continue
			}
			c.history.Store(int64(math.Round(v * 1e9)))
		}
		c.sendParams(r.RequestID)
	default:
		if capName, ok := notSupported[r.Op]; ok {
			c.protoErr("%s not supported: this server does not have the %s capability", r.Op, capName)
			return
		}
		c.protoErr("unknown op %q", r.Op)
	}
}

// maxHistory bounds the history a client may ask for (the rings hold less).
const maxHistory = 24 * time.Hour

func (c *client) sendParams(id string) {
	c.text(mustJSON(paramValuesMsg{Op: "parameterValues", ID: id,
		Parameters: []paramValue{{Name: ParamHistory, Value: time.Duration(c.history.Load()).Seconds(), Type: "float64"}}}))
}

// writeLoop sends what the queue holds, each message within the stall
// timeout (past it the connection is cut).
func (c *client) writeLoop() {
	var buf []byte
	timeout := c.s.opts.StallTimeout + closeGrace
	for {
		it, ok := c.q.next(c.ctx)
		if !ok {
			return
		}
		typ := websocket.MessageBinary
		var b []byte
		switch it.kind {
		case kText:
			typ, b = websocket.MessageText, it.data
		case kTime:
			buf = appendTime(buf[:0], it.ns)
			b = buf
		default:
			buf = appendMessageData(buf[:0], it.sub, it.ns, it.data)
			b = buf
		}
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		c.writing.Store(true)
		err := c.conn.Write(ctx, typ, b)
		c.writing.Store(false)
		cancel()
		if err != nil {
			if c.ctx.Err() == nil {
				c.setReason(ReasonWrite, err.Error())
				c.cancel()
			}
			return
		}
		if it.cnt != nil {
			it.cnt.sent.Add(1)
		}
		if cap(buf) > 4<<20 {
			buf = nil // a large message's buffer is not kept
		}
	}
}

// pingLoop pings an idle client; one that does not answer is cut off. A
// client with messages waiting is not pinged: the writer's timeout and the
// stall timeout judge it (a ping would queue behind a blocked write).
func (c *client) pingLoop() {
	t := time.NewTicker(pingInterval)
	defer t.Stop()
	wait := max(pingTimeout, c.s.opts.StallTimeout+2*closeGrace)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if bytes, full := c.q.state(); c.writing.Load() || bytes > 0 || full != 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, wait)
		err := c.conn.Ping(ctx)
		cancel()
		if err != nil {
			if c.ctx.Err() == nil {
				c.setReason(ReasonPing, "no answer to a ping within "+wait.String())
				c.cancel()
			}
			return
		}
	}
}

// status is the client's figures now.
func (c *client) status() ClientStatus {
	bytes, _ := c.q.state()
	st := ClientStatus{ID: c.id, Remote: c.remote, ConnectedS: time.Since(c.since).Seconds(), Subscriptions: int(c.nsubs.Load()),
		HistoryS: time.Duration(c.history.Load()).Seconds(), QueueBytes: bytes, QueuePeakBytes: c.q.peak.Load(),
		QueueLimitBytes: c.s.opts.Queue, ProtocolErrors: c.errs.Load(), Published: c.published.Load(), Topics: []TopicStatus{}}
	c.mu.Lock()
	st.Reason, st.Detail = c.reason, c.detail
	for _, t := range c.topics {
		ts := t.status()
		st.Sent += ts.Sent
		st.Dropped += ts.Dropped
		st.Lost += ts.Lost
		st.Untranscodable += ts.Untranscodable
		st.Topics = append(st.Topics, ts)
	}
	c.mu.Unlock()
	sort.Slice(st.Topics, func(i, j int) bool { return st.Topics[i].Topic < st.Topics[j].Topic })
	return st
}
