//go:build !ecu || http

package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/daemon"
)

// TestRunHTTPHardening: the HTTP listener defaults to loopback, asks for
// the bearer token when one is set, serves pprof only when enabled, takes
// GET and HEAD only, and cuts off clients that send nothing.
func TestRunHTTPHardening(t *testing.T) {
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[control]
socket = "$DIR/edr.sock"
http = ":0"
http_token = "s3cret"
`, nil, nil)
	addr := d.httpAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("http = \":0\" listens on %s, want loopback", addr)
	}
	get := func(method, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/status", "", 401},
		{"GET", "/status", "wrong", 401},
		{"GET", "/status", "s3cret", 200},
		{"GET", "/metrics", "s3cret", 200},
		{"GET", "/debug/pprof/", "s3cret", 404},
		{"POST", "/status", "s3cret", 405},
	} {
		if got := get(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s token %q: %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
	// idle connections that never send a request are closed by the server
	var idle []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for i, c := range idle {
		c.SetReadDeadline(time.Now().Add(3 * daemon.HTTPReadHeaderTimeout))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle connection %d not closed by the server: %v", i, err)
		}
		c.Close()
	}
	if got := get("GET", "/status", "s3cret"); got != 200 {
		t.Errorf("after the idle clients: %d", got)
	}

	// pprof when enabled; a warning when listening beyond loopback without a token
	d2 := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[control]
socket = "$DIR/edr.sock"
http = "0.0.0.0:0"
pprof = true
`, nil, nil)
	addr = d2.httpAddr(t)
	if got := get("GET", "/debug/pprof/", ""); got != 200 {
		t.Errorf("pprof enabled: %d", got)
	}
	if logs := d2.logs.String(); !strings.Contains(logs, "control.http: without control.http_token, /status and /metrics answer any host that reaches 0.0.0.0:0") {
		t.Errorf("no warning for a non-loopback HTTP listener without a token:\n%s", logs)
	}
	if logs := d.logs.String(); strings.Contains(logs, "http_token") {
		t.Errorf("warning for a listener with a token:\n%s", logs)
	}
}
