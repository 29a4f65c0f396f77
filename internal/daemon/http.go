package daemon

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"
)

// Limits of the HTTP listener (/metrics, /status, /debug/pprof): slow or
// idle clients are cut off, and at most HTTPMaxConns connections are open
// at once (the rest wait in the listen backlog).
const (
	HTTPMaxConns          = 64
	HTTPReadHeaderTimeout = 5 * time.Second
	HTTPReadTimeout       = 10 * time.Second
	HTTPWriteTimeout      = 30 * time.Second // pprof handlers lift it for their own duration
	HTTPIdleTimeout       = 60 * time.Second
	HTTPMaxHeaderBytes    = 16 << 10
	HTTPMaxBodyBytes      = 4 << 10
)

// httpListenAddr resolves the configured HTTP address: a missing host
// means loopback (":9464" listens on 127.0.0.1:9464, not on every
// interface). It reports whether the address is reachable from other
// machines (not loopback).
func httpListenAddr(a string) (addr string, exposed bool, err error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", false, fmt.Errorf("control.http %q: %w (want HOST:PORT, e.g. 127.0.0.1:9464)", a, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if host == "localhost" {
		return net.JoinHostPort(host, port), false, nil
	}
	ip := net.ParseIP(host)
	return net.JoinHostPort(host, port), ip == nil || !ip.IsLoopback(), nil
}

// newHTTPServer builds the HTTP server with its timeouts and limits.
func (d *Daemon) newHTTPServer() *http.Server {
	return &http.Server{
		Handler:           d.httpGuard(d.httpHandler()),
		ReadHeaderTimeout: HTTPReadHeaderTimeout,
		ReadTimeout:       HTTPReadTimeout,
		WriteTimeout:      HTTPWriteTimeout,
		IdleTimeout:       HTTPIdleTimeout,
		MaxHeaderBytes:    HTTPMaxHeaderBytes,
	}
}

// httpGuard refuses what the endpoints never need: methods other than GET
// and HEAD, request bodies over HTTPMaxBodyBytes, and (when a token is
// configured) requests without "Authorization: Bearer TOKEN".
func (d *Daemon) httpGuard(h http.Handler) http.Handler {
	token := d.cfg.Control.HTTPToken
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="edr-lite"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <control.http_token>", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, HTTPMaxBodyBytes)
		h.ServeHTTP(w, r)
	})
}

// httpHandler routes /metrics, /status, the report pages (/, /dumps/;
// report.go) and, when enabled, /debug/pprof.
func (d *Daemon) httpHandler() http.Handler {
	mux := http.NewServeMux()
	d.reportRoutes(mux)
	mux.Handle("/metrics", d.metricsHandler())
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(d.Status())
	})
	if d.cfg.Control.PProf {
		long := func(h http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				// a CPU profile or trace streams for ?seconds=N
				http.NewResponseController(w).SetWriteDeadline(time.Time{})
				h(w, r)
			}
		}
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", long(pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", long(pprof.Trace))
	}
	return mux
}

// limitListener accepts at most n connections at a time: Accept waits for
// one to close. Close unblocks a waiting Accept.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
