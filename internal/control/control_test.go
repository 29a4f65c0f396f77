package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndPermissions(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "edr.sock")
	s, err := Listen(sock, HandlerFunc(func(ctx context.Context, r *Request) *Response {
		switch r.Op {
		case "trigger":
			if r.Reason == "" {
				return &Response{Error: "trigger: reason is empty"}
			}
			return &Response{OK: true, ID: 7, Path: "/d/" + r.Reason + ".pack"}
		case "status":
			return &Response{OK: true, Status: json.RawMessage(`{"topics":3}`)}
		}
		return &Response{Error: "unknown op " + r.Op}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	ctx := context.Background()
	resp, err := Do(ctx, sock, &Request{Op: "trigger", Reason: "manual"})
	if err != nil || resp.ID != 7 || resp.Path != "/d/manual.pack" {
		t.Fatalf("trigger = %+v, %v", resp, err)
	}
	resp, err = Do(ctx, sock, &Request{Op: "status"})
	if err != nil || string(resp.Status) != `{"topics":3}` {
		t.Fatalf("status = %+v, %v", resp, err)
	}
	if _, err := Do(ctx, sock, &Request{Op: "trigger"}); err == nil || !strings.Contains(err.Error(), "reason is empty") {
		t.Fatalf("handler error not passed through: %v", err)
	}
	// a second server on the same live socket is refused
	if _, err := Listen(sock, HandlerFunc(func(context.Context, *Request) *Response { return nil })); err == nil {
		t.Fatal("second Listen on a live socket succeeded")
	}
}

func TestNoRecorderAndStaleSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "edr.sock")
	if _, err := Do(context.Background(), sock, &Request{Op: "status"}); !errors.Is(err, ErrNoRecorder) {
		t.Fatalf("err = %v, want ErrNoRecorder", err)
	}
	s, err := Listen(sock, HandlerFunc(func(context.Context, *Request) *Response { return &Response{OK: true} }))
	if err != nil {
		t.Fatal(err)
	}
	s.ln.Close() // simulate a crash: the socket file stays, nobody listens
	s.wg.Wait()
	s2, err := Listen(sock, HandlerFunc(func(context.Context, *Request) *Response { return &Response{OK: true} }))
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	s2.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatal("Close left the socket file")
	}
	os.WriteFile(sock, []byte("x"), 0o644)
	if _, err := Listen(sock, nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file replaced: %v", err)
	}
}

func TestDoHonoursContext(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "edr.sock")
	release := make(chan struct{})
	s, err := Listen(sock, HandlerFunc(func(ctx context.Context, r *Request) *Response {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &Response{OK: true}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Do(ctx, sock, &Request{Op: "trigger", Reason: "x"}); err == nil {
		t.Fatal("Do returned without error while the handler was blocked")
	}
}

// TestLimits: an over-long request is answered with an error naming the
// limit; a client that sends nothing is cut off after RequestTimeout; more
// than MaxConns clients wait (they are not refused) and are served once
// others leave.
func TestLimits(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "edr.sock")
	s, err := Listen(sock, HandlerFunc(func(context.Context, *Request) *Response { return &Response{OK: true} }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go c.Write([]byte(`{"op":"status","reason":"` + strings.Repeat("x", MaxRequest) + `"}` + "\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || !strings.Contains(line, "longer than 65536 bytes") {
		t.Errorf("over-long request: %q %v", line, err)
	}
	var idle []net.Conn
	for range MaxConns + 8 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// every slot is taken: a request waits, then is served when one frees
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*RequestTimeout)
		defer cancel()
		_, err := Do(ctx, sock, &Request{Op: "status"})
		done <- err
	}()
	for _, c := range idle {
		c.Close()
	}
	if err := <-done; err != nil {
		t.Errorf("request after the idle clients left: %v", err)
	}
}
