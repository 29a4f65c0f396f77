//go:build ecu && !http

// The ECU build (go build -tags ecu, docs/ecu.md) leaves out the HTTP
// stack: the HTTP listener (control.http: /metrics, /status,
// /debug/pprof), the Prometheus metrics and the live server ([live]), so
// that net/http, crypto/tls, Prometheus and coder/websocket are not
// linked. Check refuses a configuration that asks for any of them ("config
// check" and "run" alike); "edr-lite status" reads the status over the
// control socket as in every build. These stand in for http.go, live.go
// and metrics.go, which go build -tags ecu,http puts back.

package daemon

import "github.com/edr-lite/edr-lite/internal/config"

// HTTPBuilt: this build has no HTTP listener, metrics or live server.
const HTTPBuilt = false

// httpParts: no HTTP listener, no live server; its methods, promoted to
// the Daemon, do nothing.
type httpParts struct{}

// LiveStatus would be the live server's part of Status; this build has
// none, so Status.Live is never set.
type LiveStatus struct{}

// notInBuild says that what is not in this build and which builds have it.
func notInBuild(what string) string {
	return what + " not in this build of edr-lite (the ECU build, go build -tags ecu): the full build has it, and so does go build -tags ecu,http (docs/ecu.md)"
}

// checkHTTP refuses the HTTP listener and what only it serves.
func checkHTTP(f *config.File, add func(key, format string, args ...any)) {
	c := f.Control
	switch {
	case c.HTTP != "":
		add("control.http", "%s; edr-lite status reads the status over control.socket", notInBuild("the HTTP listener (/metrics, /status) is"))
	case c.HTTPToken != "":
		add("control.http_token", "%s", notInBuild("the HTTP listener (/metrics, /status), which the token guards, is"))
	}
	if c.PProf {
		add("control.pprof", "%s", notInBuild("/debug/pprof (CPU and heap profiles on the HTTP listener) is"))
	}
}

// checkLive refuses the live server: at live.listen, or at the first key
// of [live] set that only the live server reads.
func checkLive(f *config.File, add func(key, format string, args ...any)) {
	l := f.Live
	for _, k := range []struct {
		key string
		set bool
	}{{"live.listen", l.Listen != ""}, {"live.token", l.Token != ""}, {"live.client_publish", l.ClientPublish},
		{"live.trigger_topics", len(l.TriggerTopics) > 0}} {
		if k.set {
			add(k.key, "%s", notInBuild("the live server ([live], Foxglove's WebSocket protocol, docs/live.md) is"))
			return
		}
	}
}

// warnHTTP: Check refuses the HTTP listener, nothing to warn about.
func warnHTTP(*config.File, func(key, format string, args ...any)) {}

func (httpParts) newHTTP() error { return nil }

func (httpParts) startHTTP() {}

func (httpParts) stopHTTP() {}

// HTTPAddr returns "": this build has no HTTP listener.
func (httpParts) HTTPAddr() string { return "" }

// HTTPPaths returns nothing: this build has no HTTP listener.
func (httpParts) HTTPPaths() []string { return nil }

func (httpParts) newLive() error { return nil }

func (httpParts) startLive() {}

func (httpParts) stopLive() {}

// LiveAddr returns "": this build has no live server.
func (httpParts) LiveAddr() string { return "" }

func (httpParts) liveStatus() *LiveStatus { return nil }
