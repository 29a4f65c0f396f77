//go:build !ecu || http

// The HTTP listener (control.http: /metrics, /status, the report pages,
// /debug/pprof). The full build has it; the ECU build leaves it out with
// the live server and the metrics, and net/http with them, unless built
// with -tags ecu,http (nohttp.go stands in; docs/ecu.md).

package daemon

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/internal/config"
)

// HTTPBuilt: this build has the HTTP listener, the metrics and the live
// server (the full build, and the ECU build with -tags ecu,http).
const HTTPBuilt = true

// httpParts are the Daemon's HTTP listener and live server.
type httpParts struct {
	web *webServer  // nil when control.http is off
	lv  *liveServer // nil when [live] is off (live.go)
}

// webServer is the daemon's HTTP server and its listener.
type webServer struct {
	srv *http.Server
	ln  net.Listener
}

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

// checkHTTP checks control.http as newHTTP would bind it.
func checkHTTP(f *config.File, add func(key, format string, args ...any)) {
	if a := f.Control.HTTP; a != "" {
		if _, err := hostPort(a); err != nil {
			add("control.http", "%q: %v", a, err)
		} else if err := probeHTTP(a); err != nil && !errors.Is(err, unix.EADDRINUSE) {
			add("control.http", "%q: %v (run would fail)", a, err)
		}
	}
}

// warnHTTP names what passes checkHTTP but will not work as meant: a port
// in use now, a listener without a token (Warnings).
func warnHTTP(f *config.File, add func(key, format string, args ...any)) {
	if a := f.Control.HTTP; a != "" {
		if _, err := hostPort(a); err == nil {
			if err := probeHTTP(a); errors.Is(err, unix.EADDRINUSE) {
				add("control.http", "%s is in use now by another process (a recorder already running?): run fails while it is", a)
			}
		}
	}
	if a := f.Control.HTTP; a != "" && f.Control.HTTPToken == "" {
		if _, exposed, err := httpListenAddr(a); err == nil {
			who := "any local user"
			if exposed {
				who = "any host that reaches " + a
			}
			add("control.http", "without control.http_token, /status and /metrics answer %s (topic names, rates, rule names; and the dumps' reports at /dumps/): set http_token (docs/security.md)", who)
		}
	}
}

// probeHTTP binds the HTTP address as New would and closes it again.
func probeHTTP(a string) error {
	addr, _, err := httpListenAddr(a)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// newHTTP binds the HTTP listener when control.http is set.
func (d *Daemon) newHTTP() error {
	a := d.cfg.Control.HTTP
	if a == "" {
		return nil
	}
	addr, _, err := httpListenAddr(a)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("control.http: %w", err)
	}
	d.web = &webServer{srv: d.newHTTPServer(), ln: newLimitListener(ln, HTTPMaxConns)}
	return nil
}

// startHTTP serves the HTTP listener.
func (d *Daemon) startHTTP() {
	if d.web == nil {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.web.srv.Serve(d.web.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server stopped", "err", err)
		}
	}()
}

// stopHTTP shuts the HTTP server down (closes the listener if it never
// served).
func (d *Daemon) stopHTTP() {
	if d.web == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	d.web.srv.Shutdown(ctx)
	cancel()
	d.web.ln.Close()
}

// HTTPAddr returns the HTTP listener's address, or "" when off.
func (d *Daemon) HTTPAddr() string {
	if d.web == nil {
		return ""
	}
	return d.web.ln.Addr().String()
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

// HTTPPaths lists what the HTTP listener serves, as the start log names
// it (/debug/pprof/ only when control.pprof is on).
func (d *Daemon) HTTPPaths() []string {
	paths := []string{"/", "/dumps/", "/metrics", "/status"}
	if d.cfg.Control.PProf {
		paths = append(paths, "/debug/pprof/")
	}
	return paths
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
