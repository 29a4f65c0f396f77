//go:build !ecu || http

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/live"
)

// TestCheckLive: the [live] section's problems are found by the check
// ("config check") and by New ("run") alike, each naming its key and line.
func TestCheckLive(t *testing.T) {
	for _, c := range []struct{ name, src, key, msg string }{
		{"beyond loopback without a token", "[live]\nlisten = \"0.0.0.0:8765\"\n", "live.listen", "set live.token"},
		{"no port", "[live]\nlisten = \"127.0.0.1\"\n", "live.listen", "HOST:PORT"},
		{"off, yet publishing", "[live]\nclient_publish = true\n", "live.listen", "the live server is off"},
		{"trigger topic without publishing", "[live]\nlisten = \"127.0.0.1:0\"\ntrigger_topics = [\"operator/mark\"]\n", "live.trigger_topics", "client_publish"},
		{"trigger topic not publishable", "[live]\nlisten = \"127.0.0.1:0\"\nclient_publish = true\ntrigger_topics = [\"vehicle/mark\"]\n", "live.trigger_topics", "publish_topics"},
		{"queue too small", "[live]\nlisten = \"127.0.0.1:0\"\nqueue = \"1KiB\"\n", "live.queue", "64KiB"},
		{"no clients", "[live]\nlisten = \"127.0.0.1:0\"\nmax_clients = 0\n", "live.max_clients", "1 to 1024"},
		{"bad publish glob", "[live]\nlisten = \"127.0.0.1:0\"\nclient_publish = true\npublish_topics = [\"op[\"]\n", "live.publish_topics", "bad glob"},
		{"stall timeout zero", "[live]\nlisten = \"127.0.0.1:0\"\nstall_timeout = \"0s\"\n", "live.stall_timeout", "> 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "edr.toml")
			writeFile(t, path, baseConfig(dir, c.src)+c.src)
			_, err := Load(path)
			var ps config.Errors
			if !errors.As(err, &ps) {
				t.Fatalf("check passed: %v", err)
			}
			found := false
			for _, p := range ps {
				if p.Key == c.key && p.Line > 0 && strings.Contains(p.Msg, c.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("check: %v; want %s: ...%s...", err, c.key, c.msg)
			}
			f, err := config.Load(path)
			if err != nil {
				return // a problem of the file itself: config.Load says it too
			}
			if d, err := New(Options{Config: f}); err == nil {
				d.Stop()
				t.Errorf("New accepted what the check refused")
			}
		})
	}
	// a token makes an exposed address fine
	dir := t.TempDir()
	path := filepath.Join(dir, "edr.toml")
	src := "[live]\nlisten = \"0.0.0.0:0\"\ntoken = \"t0k\"\n"
	writeFile(t, path, baseConfig(dir, src)+src)
	if _, err := Load(path); err != nil {
		t.Errorf("an exposed address with a token: %v", err)
	}
}

// TestDaemonLive: with [live] on, a client connects to the daemon's live
// server, sees its topics, publishes a mark on a trigger topic and so
// triggers a dump (source live, the mark's reason); "status" and
// /metrics show the live server in snake_case.
func TestDaemonLive(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Live.Listen = "127.0.0.1:0"
	cfg.Live.ClientPublish = true
	cfg.Live.TriggerTopics = []string{"operator/mark"}
	dumps := make(chan string, 4)
	d, err := New(Options{Config: cfg, OnDump: func(r dump.Result) { dumps <- r.Path + "|" + r.Records[0].Source + "|" + r.Records[0].Reason }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		d.Stop()
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	if d.LiveAddr() == "" {
		t.Fatal("no live address")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+d.LiveAddr()+"/", &websocket.DialOptions{Subprotocols: []string{live.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"clientPublish"`) {
		t.Fatalf("serverInfo %s: %v", b, err)
	}
	c.Write(ctx, websocket.MessageText, []byte(`{"op":"advertise","channels":[{"id":1,"topic":"operator/mark","encoding":"json","schemaName":"Mark"}]}`))
	c.Write(ctx, websocket.MessageBinary, append([]byte{1, 1, 0, 0, 0}, `{"reason":"pothole"}`...))
	select {
	case got := <-dumps:
		if !strings.HasSuffix(got, "|"+dumpinfo.SourceLive+"|pothole") {
			t.Errorf("dump %s", got)
		}
	case <-ctx.Done():
		t.Fatal("the mark triggered no dump")
	}
	js, _ := json.Marshal(d.Status())
	for _, k := range []string{`"live":{"connected":1`, `"refused_max_clients":0`, `"published":1`, `"queue_limit_bytes":`} {
		if !strings.Contains(string(js), k) {
			t.Errorf("status lacks %s: %.600s", k, js)
		}
	}
	resp, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, k := range []string{"edr_live_clients 1", "edr_live_published_total 1", `edr_live_refused_total{cause="unauthorized"} 0`} {
		if !strings.Contains(string(m), k) {
			t.Errorf("/metrics lacks %s", k)
		}
	}
}
