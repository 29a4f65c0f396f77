package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// Request is one operation.
type Request struct {
	// Op is "trigger", "status" or "reload" for a recorder; "pause",
	// "resume", "step" or "status" for a replay started with --control.
	Op     string `json:"op"`
	Reason string `json:"reason,omitempty"`
	// Pre and Post are durations ("20s", "0s"); "" (absent) means the
	// configured windows, "0s" a zero window.
	Pre  string `json:"pre,omitempty"`
	Post string `json:"post,omitempty"`
	// At is "" (now) or "last": anchor the dump at the newest message of
	// the selected topics.
	At      string   `json:"at,omitempty"`
	Topics  []string `json:"topics,omitempty"`
	Tag     string   `json:"tag,omitempty"`
	NoWait  bool     `json:"no_wait,omitempty"` // trigger: answer once accepted, not once written
	Timeout string   `json:"timeout,omitempty"` // trigger: give up waiting after this long
	Steps   int      `json:"steps,omitempty"`   // replay step: messages to let through (0 = 1)
}

// Response answers a Request.
type Response struct {
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	ID     uint64          `json:"id,omitempty"`     // trigger id
	Path   string          `json:"path,omitempty"`   // finalized dump
	Bytes  int64           `json:"bytes,omitempty"`  // dump size
	Status json.RawMessage `json:"status,omitempty"` // status document
	// Dump describes the dump a waited-for trigger ended in (written or
	// not), which may be one another trigger started.
	Dump *Dump `json:"dump,omitempty"`
}

// Dump is the outcome of the dump a trigger ended in.
type Dump struct {
	Status   string `json:"status"` // written, failed, refused, abandoned
	Messages uint64 `json:"messages"`
	// StartNs and EndNs bound the window the dump covers.
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// Merged is set when the trigger joined a dump another trigger
	// started (the first of Triggers); Triggers are every trigger the
	// dump holds, each with its reason, source and window.
	Merged   bool               `json:"merged,omitempty"`
	Triggers []dumpinfo.Trigger `json:"triggers"`
	// Losses inside the window, by cause (see dumpinfo.TopicAccount).
	Overwritten  uint64 `json:"overwritten"`
	LostAtSource uint64 `json:"lost_at_source"`
	Oversize     uint64 `json:"oversize"`
	SkippedBusy  uint64 `json:"skipped_busy"`
	// Late: messages written out of event-time order (beyond the reorder
	// stage's bound).
	Late uint64 `json:"late,omitempty"`
}

// Handler carries out requests.
type Handler interface {
	Handle(ctx context.Context, req *Request) *Response
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) *Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) *Response { return f(ctx, req) }

// Limits of the control socket. A client has RequestTimeout to send its
// request line (at most MaxRequest bytes) and WriteTimeout to take the
// answer; at most MaxConns connections are served at once, the rest wait
// in the listen backlog (not accepted) until one ends.
const (
	MaxRequest     = 64 << 10
	MaxConns       = 32
	RequestTimeout = 5 * time.Second
	WriteTimeout   = 10 * time.Second
)

// Server serves a Handler on a unix socket.
type Server struct {
	path  string
	ln    net.Listener
	h     Handler
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	slots chan struct{} // one per connection being served

	// AcceptErrors counts Accept failures retried (EMFILE and the like).
	acceptErrors atomic.Uint64
}

// Listen creates the socket at path with mode 0600 (replacing a stale socket
// left by a crashed recorder, refusing to replace anything else) and serves
// h until Close.
func Listen(path string, h Handler) (*Server, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("control: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, fmt.Errorf("control: %s: another recorder is listening", path)
		}
		os.Remove(path)
	}
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{path: path, ln: ln, h: h, ctx: ctx, stop: stop, slots: make(chan struct{}, MaxConns)}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Path returns the socket path.
func (s *Server) Path() string { return s.path }

// AcceptErrors returns how many Accept failures (out of descriptors, say)
// the server has retried.
func (s *Server) AcceptErrors() uint64 { return s.acceptErrors.Load() }

// serve accepts connections until Close. A failed Accept (EMFILE when the
// process is out of descriptors, ENFILE, ENOBUFS...) is retried after a
// back-off from 5 ms doubling to 1 s, as net/http does: the socket keeps
// serving once descriptors are free again. At most MaxConns connections
// are served at once; further ones wait in the backlog.
func (s *Server) serve() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		c, err := s.ln.Accept()
		if err != nil {
			<-s.slots
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.acceptErrors.Add(1)
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else {
				delay = min(2*delay, time.Second)
			}
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		delay = 0
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			defer c.Close()
			s.handle(c)
		}()
	}
}

func (s *Server) handle(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(RequestTimeout))
	br := bufio.NewReaderSize(io.LimitReader(c, MaxRequest+1), 4096)
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return
	}
	c.SetReadDeadline(time.Time{})
	var req Request
	var resp *Response
	if len(line) > MaxRequest || (err != nil && len(line) == MaxRequest+1) {
		resp = &Response{Error: fmt.Sprintf("bad request: longer than %d bytes", MaxRequest)}
	} else if err := json.Unmarshal(line, &req); err != nil {
		resp = &Response{Error: fmt.Sprintf("bad request: %v", err)}
	} else {
		resp = s.h.Handle(s.ctx, &req)
		if resp == nil {
			resp = &Response{Error: "no response"}
		}
	}
	b, _ := json.Marshal(resp)
	c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	c.Write(append(b, '\n'))
}

// Close stops accepting, cancels in-flight requests, waits for them and
// removes the socket.
func (s *Server) Close() error {
	s.stop()
	err := s.ln.Close()
	s.wg.Wait()
	os.Remove(s.path)
	return err
}

// ErrNoRecorder is returned by Do when nothing listens on the socket.
var ErrNoRecorder = errors.New("control: no recorder is listening on the socket")

// Do sends req to the recorder listening at path and returns its response.
// A response with OK false is returned as an error carrying its message.
func Do(ctx context.Context, path string, req *Request) (*Response, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrNoRecorder, path, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("control: send: %w", err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("control: the recorder closed the connection without answering: %w", err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("control: bad response: %w", err)
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
