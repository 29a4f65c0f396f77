//go:build !ecu || http

package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/live"
)

// The live server ([live], package live, docs/live.md): built by New,
// serving from Start, closed before the recorder is. Not in the ECU build
// unless it is built with the HTTP stack (-tags ecu,http; nohttp.go).

// LiveStatus is the live server's part of Status.
type LiveStatus = live.Status

// liveServer is the daemon's live server and its listener.
type liveServer struct {
	srv  *live.Server
	ln   net.Listener
	addr string
	wg   sync.WaitGroup
	once sync.Once
}

// Bounds Check puts on [live].
const (
	liveMinQueue      = 64 << 10
	liveMaxMessageCap = 64 << 20
	liveMaxClientsCap = 1024
)

// checkLive checks the [live] section as newLive would build it.
func checkLive(f *config.File, add func(key, format string, args ...any)) {
	l := f.Live
	if l.Listen == "" {
		if l.ClientPublish || len(l.TriggerTopics) > 0 || l.Token != "" {
			add("live.listen", "is empty: the live server is off, yet client_publish, trigger_topics or token is set")
		}
		return
	}
	_, exposed, err := liveListenAddr(l.Listen)
	if err != nil {
		add("live.listen", "%v", err)
	} else if exposed && l.Token == "" {
		add("live.listen", "%q is reachable from other machines: set live.token (clients then connect to ws://HOST:PORT/?token=TOKEN), or listen on 127.0.0.1", l.Listen)
	}
	if l.MaxClients < 1 || l.MaxClients > liveMaxClientsCap {
		add("live.max_clients", "%d: want 1 to %d", l.MaxClients, liveMaxClientsCap)
	}
	if l.MaxSubscriptions < 1 {
		add("live.max_subscriptions", "%d: want at least 1", l.MaxSubscriptions)
	}
	if l.MaxClientMessage < 1024 || l.MaxClientMessage > liveMaxMessageCap {
		add("live.max_client_message", "%d bytes: want 1KiB to 64MiB", l.MaxClientMessage)
	}
	if l.Queue < liveMinQueue {
		add("live.queue", "%d bytes: want at least 64KiB", l.Queue)
	}
	if l.StallTimeout <= 0 {
		add("live.stall_timeout", "want a duration > 0")
	}
	for _, g := range l.PublishTopics {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			add("live.publish_topics", "bad glob %q", g)
		}
	}
	for _, t := range l.TriggerTopics {
		switch {
		case !l.ClientPublish:
			add("live.trigger_topics", "%q: clients cannot publish it: set live.client_publish = true", t)
		case !matchAny(l.PublishTopics, t):
			add("live.trigger_topics", "%q is not one of live.publish_topics (%s): clients cannot publish it", t, strings.Join(l.PublishTopics, ", "))
		}
	}
	for _, o := range l.Origins {
		if _, err := path.Match(o, ""); err != nil || o == "" {
			add("live.origins", "bad pattern %q", o)
		}
	}
}

// liveListenAddr resolves live.listen as control.http's address is: no
// host means loopback; it reports whether the address is reachable from
// other machines.
func liveListenAddr(a string) (string, bool, error) {
	if _, err := hostPort(a); err != nil {
		return "", false, fmt.Errorf("%q: %v (want HOST:PORT, e.g. 127.0.0.1:8765)", a, err)
	}
	return httpListenAddr(a)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// newLive builds the live server and binds its listener when [live] is
// on. The recorder must exist.
func (d *Daemon) newLive() error {
	l := d.cfg.Live
	if l.Listen == "" {
		return nil
	}
	addr, _, err := liveListenAddr(l.Listen)
	if err != nil {
		return fmt.Errorf("live.listen: %w", err)
	}
	opts := live.Options{Name: d.opts.Version, Token: l.Token, Origins: l.Origins, MaxClients: l.MaxClients,
		MaxSubscriptions: l.MaxSubscriptions, MaxClientMessage: int64(l.MaxClientMessage), Queue: int64(l.Queue),
		StallTimeout: l.StallTimeout.D(), History: l.History.D(), Logger: d.log}
	if l.ClientPublish {
		opts.Publish = &live.Publish{Sink: d.sourceSink("live"), Topics: l.PublishTopics, OnMessage: d.livePublished}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("live.listen: %w", err)
	}
	srv, err := live.New(d.rec, opts)
	if err != nil {
		ln.Close()
		return err
	}
	d.lv = &liveServer{srv: srv, ln: ln, addr: ln.Addr().String()}
	return nil
}

// startLive serves the live clients.
func (d *Daemon) startLive() {
	lv := d.lv
	if lv == nil {
		return
	}
	lv.wg.Add(1)
	go func() {
		defer lv.wg.Done()
		if err := lv.srv.Serve(lv.ln); err != nil {
			d.log.Error("live server stopped", "err", err)
		}
	}()
	d.log.Info("live: Foxglove WebSocket server listening", "url", "ws://"+lv.addr, "client_publish", d.cfg.Live.ClientPublish)
}

// stopLive disconnects every client and closes the listener (before the
// recorder closes: the server's readers hold its rings).
func (d *Daemon) stopLive() {
	lv := d.lv
	if lv == nil {
		return
	}
	lv.once.Do(func() {
		lv.srv.Close()
		lv.ln.Close()
		lv.wg.Wait()
	})
}

// LiveAddr returns the live server's address, or "" when off.
func (d *Daemon) LiveAddr() string {
	if d.lv == nil {
		return ""
	}
	return d.lv.addr
}

// liveStatus is the live server's status, nil when off.
func (d *Daemon) liveStatus() *live.Status {
	if d.lv == nil {
		return nil
	}
	st := d.lv.srv.Status()
	return &st
}

// livePublished triggers a dump when a client published on one of
// live.trigger_topics: at the message's capture time, with the "reason"
// field of a JSON message as the reason when it has one.
func (d *Daemon) livePublished(topic string, captureNs int64, data []byte) {
	if !matchAny(d.cfg.Live.TriggerTopics, topic) {
		return
	}
	reason := "operator mark"
	var m struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(data, &m) == nil && m.Reason != "" && len(m.Reason) <= 128 {
		reason = m.Reason
	}
	id, err := d.dumper.Trigger(dump.TriggerParams{Reason: reason, Source: dumpinfo.SourceLive, TimeNs: captureNs, Tag: topic})
	if err != nil {
		d.log.Warn("live trigger refused", "topic", topic, "reason", reason, "err", err)
		return
	}
	d.log.Info("trigger", "id", id, "source", dumpinfo.SourceLive, "topic", topic, "reason", reason)
}

// liveCollector serves the live server's figures as metrics.
type liveCollector struct{ d *Daemon }

var (
	descLiveClients  = prometheus.NewDesc("edr_live_clients", "Clients of the live (Foxglove WebSocket) server connected now.", nil, nil)
	descLiveMessages = prometheus.NewDesc("edr_live_messages_total",
		"Messages of a topic the live server sent to its clients, or did not: dropped (a client's queue was full), lost (overwritten in the ring before the server read them), untranscodable; over every client, connected or gone.",
		[]string{"topic", "outcome"}, nil)
	descLiveClientMessages = prometheus.NewDesc("edr_live_client_messages_total",
		"Messages of a topic sent to one connected client, or dropped, lost, untranscodable for it.", []string{"client", "topic", "outcome"}, nil)
	descLiveClientQueue = prometheus.NewDesc("edr_live_client_queue_bytes", "Bytes waiting to be sent to one connected client.", []string{"client"}, nil)
	descLiveDisconnects = prometheus.NewDesc("edr_live_disconnects_total", "Live clients gone, by reason.", []string{"reason"}, nil)
	descLiveRefused     = prometheus.NewDesc("edr_live_refused_total", "Live connections refused, by cause.", []string{"cause"}, nil)
	descLivePublished   = prometheus.NewDesc("edr_live_published_total", "Messages live clients published into the recorder.", nil, nil)
)

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLiveClients, descLiveMessages, descLiveClientMessages, descLiveClientQueue,
		descLiveDisconnects, descLiveRefused, descLivePublished} {
		ch <- d
	}
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.d.liveStatus()
	if st == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLiveClients, prometheus.GaugeValue, float64(st.Connected))
	outcomes := func(t live.TopicStatus) map[string]uint64 {
		return map[string]uint64{"sent": t.Sent, "dropped": t.Dropped, "lost": t.Lost, "untranscodable": t.Untranscodable}
	}
	for _, t := range st.Topics {
		for o, v := range outcomes(t) {
			ch <- prometheus.MustNewConstMetric(descLiveMessages, prometheus.CounterValue, float64(v), t.Topic, o)
		}
	}
	for _, cl := range st.Clients {
		id := fmt.Sprint(cl.ID)
		ch <- prometheus.MustNewConstMetric(descLiveClientQueue, prometheus.GaugeValue, float64(cl.QueueBytes), id)
		for _, t := range cl.Topics {
			for o, v := range outcomes(t) {
				ch <- prometheus.MustNewConstMetric(descLiveClientMessages, prometheus.CounterValue, float64(v), id, t.Topic, o)
			}
		}
	}
	for r, v := range st.Disconnects {
		ch <- prometheus.MustNewConstMetric(descLiveDisconnects, prometheus.CounterValue, float64(v), r)
	}
	for cause, v := range map[string]uint64{"max_clients": st.RefusedMaxClients, "connections": st.RefusedConnections,
		"unauthorized": st.Unauthorized, "bad_handshake": st.BadHandshakes} {
		ch <- prometheus.MustNewConstMetric(descLiveRefused, prometheus.CounterValue, float64(v), cause)
	}
	ch <- prometheus.MustNewConstMetric(descLivePublished, prometheus.CounterValue, float64(st.Published))
}
