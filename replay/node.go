package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/shm"
)

// The node under test's life cycle (LoopOptions.Node), as ROS 2's
// launch_testing gives it: the loop starts the node, waits until it is
// ready, watches it while the inputs are replayed (a node that exits is a
// crash, reported with its exit status and the last lines of its stderr,
// apart from a node that runs and stays silent), and stops it at the end
// (SIGTERM to its process group, SIGKILL after a grace period).

// Defaults of NodeOptions.
const (
	// DefaultNodeReadyTimeout is how long a node may take to be ready.
	DefaultNodeReadyTimeout = 10 * time.Second
	// DefaultNodeGrace is how long a node has to exit after SIGTERM
	// before it is killed (launch's sigterm_timeout).
	DefaultNodeGrace = 5 * time.Second
)

// Bounds of what is kept of the node's output: the last nodeTailLines
// lines of its stderr, each cut at nodeLineBytes.
const (
	nodeTailLines = 20
	nodeLineBytes = 1024
)

// readyPoll is how often the file and socket conditions are looked at.
const readyPoll = 10 * time.Millisecond

// NodeOptions configure the node under test a closed loop starts.
type NodeOptions struct {
	// Command is the node's command line: words split as a shell splits
	// them ('…' and "…" quote, a backslash escapes; nothing is expanded),
	// leading NAME=VALUE words added to its environment
	// ("EDR_BRAKE_THRESHOLD=17 ./brake-node -shm /tmp/sut"). It runs in a
	// process group of its own (its children are stopped with it), and
	// its exit status is its own (no shell in between).
	Command string
	// Ready are the conditions that say the node is ready; every one must
	// hold. None: the loop's default (its expected topics' segments in
	// the listened shm directory).
	Ready []Ready
	// ReadyTimeout bounds the wait (DefaultNodeReadyTimeout when 0).
	ReadyTimeout time.Duration
	// Grace is how long the node has to exit after SIGTERM at the end
	// before SIGKILL (DefaultNodeGrace when 0).
	Grace time.Duration
	// Output receives the node's stdout and stderr, line by line,
	// prefixed "node: " (nil: not shown). Lines are cut at 1 KiB. It is
	// written from the goroutines reading the node's output, one line at
	// a time, while the loop runs: it must be safe to write to while the
	// caller writes to it too (os.Stderr is).
	Output io.Writer
}

// Ready is one condition of a node's readiness: a segment of a topic
// appears in a directory (created after the node started), a UDP socket
// is bound to a port (after it started), or a line of its stdout or stderr
// matches a regular expression. Exactly one field is set.
type Ready struct {
	SegmentDir, Segment string // the topic ("name" or "name#channel")
	UDPPort             int
	Line                *regexp.Regexp
}

func (r Ready) String() string {
	switch {
	case r.Segment != "":
		return "segment " + r.Segment + " in " + r.SegmentDir
	case r.UDPPort != 0:
		return "udp port " + strconv.Itoa(r.UDPPort) + " bound"
	case r.Line != nil:
		return "a line matching " + strconv.Quote(r.Line.String())
	}
	return "nothing"
}

// ParseReady reads a readiness condition: segment:TOPIC (a segment of
// TOPIC in shmDir, the directory the outputs are listened in),
// udp:PORT or udp:HOST:PORT (a UDP socket bound to PORT), or line:REGEXP (a
// line of the node's stdout or stderr matching REGEXP).
func ParseReady(spec, shmDir string) (Ready, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch {
	case kind == "segment" && arg != "":
		if shmDir == "" {
			return Ready{}, fmt.Errorf("%w: ready %q: no shm directory the outputs are listened in, to look for the segment", ErrOptions, spec)
		}
		return Ready{SegmentDir: shmDir, Segment: arg}, nil
	case kind == "udp" && arg != "" && !udpReadySupported:
		return Ready{}, fmt.Errorf("%w: ready %q: a bound UDP port is seen in /proc/net/udp, on Linux only: use line:REGEXP", ErrOptions, spec)
	case kind == "udp" && arg != "":
		p := arg
		if i := strings.LastIndexByte(arg, ':'); i >= 0 {
			p = arg[i+1:]
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return Ready{}, fmt.Errorf("%w: ready %q: want udp:PORT or udp:HOST:PORT", ErrOptions, spec)
		}
		return Ready{UDPPort: n}, nil
	case kind == "line" && arg != "":
		re, err := regexp.Compile(arg)
		if err != nil {
			return Ready{}, fmt.Errorf("%w: ready %q: %v", ErrOptions, spec, err)
		}
		return Ready{Line: re}, nil
	}
	return Ready{}, fmt.Errorf("%w: ready %q: want segment:TOPIC, udp:PORT or line:REGEXP", ErrOptions, spec)
}

// NodeReport is what became of the node under test.
type NodeReport struct {
	Command string `json:"command"`
	PID     int    `json:"pid,omitempty"`
	// Ready says what showed it was ready and ReadyNs after how long (0
	// and "" when it never was).
	Ready   string `json:"ready,omitempty"`
	ReadyNs int64  `json:"ready_ns,omitempty"`
	// Exited is set when the node exited on its own (before it was
	// stopped): a crash when the loop was not done with it. Exit is how
	// it ended: "exit status 2", "signal: segmentation fault", or after
	// the stop "stopped by SIGTERM: exit status 0", "killed: it did not
	// exit within 5s of SIGTERM".
	Exited bool   `json:"exited"`
	Exit   string `json:"exit,omitempty"`
	// Inputs is how many inputs had been released when it exited on its
	// own.
	Inputs int `json:"inputs_when_exited,omitempty"`
	// Stderr are the last lines of its stderr (at most 20 of 1 KiB).
	Stderr []string `json:"stderr_tail,omitempty"`
}

// ErrNode is wrapped by the errors of a node under test that did not get
// ready or exited while the loop needed it.
var ErrNode = errors.New("replay: node under test")

// node is a running node under test.
type node struct {
	opts    NodeOptions
	cmd     *exec.Cmd
	start   time.Time
	done    chan struct{} // closed when the process has exited (and its output is read)
	waitErr error         // cmd.Wait's, valid after done

	mu      sync.Mutex
	tail    []string // the last lines of stderr
	lines   []string // lines not yet matched against the line conditions (while waiting)
	matched []bool   // by Ready index: a line condition seen
	stopped bool     // Stop sent SIGTERM
	rep     NodeReport
}

// launchNode starts the node and waits until every condition of ready
// holds, the node exits, ReadyTimeout passes or ctx ends; on failure the
// node is stopped and the error (wrapping ErrNode) names what was awaited,
// and the node (nil when it could not start) holds the report.
func launchNode(ctx context.Context, o NodeOptions) (*node, error) {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultNodeReadyTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultNodeGrace
	}
	n := &node{opts: o, done: make(chan struct{}), matched: make([]bool, len(o.Ready)), rep: NodeReport{Command: o.Command}}
	// what the conditions see before the node starts: a segment or a
	// socket of an earlier run does not say this node is ready
	before := make([]uint64, len(o.Ready))
	for i, r := range o.Ready {
		before[i] = n.probe(r)
	}
	env, argv, err := SplitCommand(o.Command)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = nodeProcAttr()
	cmd.Stdout = &lineWriter{n: n}
	cmd.Stderr = &lineWriter{n: n, stderr: true}
	cmd.WaitDelay = time.Second // a grandchild holding the pipes does not hold the loop
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNode, o.Command, err)
	}
	n.cmd, n.start, n.rep.PID = cmd, time.Now(), cmd.Process.Pid
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()

	deadline := time.NewTimer(o.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		pending := n.pending(before)
		if len(pending) == 0 {
			n.mu.Lock()
			n.rep.ReadyNs = int64(time.Since(n.start))
			var what []string
			for _, r := range o.Ready {
				what = append(what, r.String())
			}
			n.rep.Ready = strings.Join(what, ", ")
			n.lines = nil
			n.mu.Unlock()
			return n, nil
		}
		select {
		case <-n.done:
			rep := n.exited(0)
			return n, fmt.Errorf("%w: %s exited before it was ready (%s), waiting for %s%s", ErrNode, o.Command, rep.Exit,
				strings.Join(pending, ", "), tailText(rep.Stderr))
		case <-deadline.C:
			rep := n.stop()
			return n, fmt.Errorf("%w: %s not ready within %v (waiting for %s; %s)%s", ErrNode, o.Command, o.ReadyTimeout,
				strings.Join(pending, ", "), rep.Exit, tailText(rep.Stderr))
		case <-ctx.Done():
			n.stop()
			return n, ctx.Err()
		case <-tick.C:
		}
	}
}

// pending lists the conditions that do not hold yet.
func (n *node) pending(before []uint64) []string {
	n.mu.Lock()
	lines := n.lines
	n.lines = nil
	n.mu.Unlock()
	var out []string
	for i, r := range n.opts.Ready {
		if r.Line != nil {
			for _, l := range lines {
				n.matched[i] = n.matched[i] || r.Line.MatchString(l)
			}
			if !n.matched[i] {
				out = append(out, r.String())
			}
			continue
		}
		if id := n.probe(r); id == 0 || id == before[i] {
			out = append(out, r.String())
		}
	}
	return out
}

// probe returns an identity of what a file or socket condition looks for
// (the segment file's inode, the bound socket's inode), 0 when absent.
func (n *node) probe(r Ready) uint64 {
	switch {
	case r.Segment != "":
		name, ch, _ := strings.Cut(r.Segment, "#")
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(r.SegmentDir, shm.SegmentFileName(name, ch)), &st); err == nil {
			return st.Ino
		}
	case r.UDPPort != 0:
		return UDPBound(r.UDPPort)
	}
	return 0
}

// Done is closed when the node has exited.
func (n *node) Done() <-chan struct{} { return n.done }

// exited fills the report of a node that exited on its own, inputs
// having been released.
func (n *node) exited(inputs int) NodeReport {
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		n.rep.Exited, n.rep.Inputs = true, inputs
		n.rep.Exit = exitText(n.waitErr)
	}
	n.rep.Stderr = append([]string(nil), n.tail...)
	return n.rep
}

// stop ends the node: SIGTERM to its process group, SIGKILL after the
// grace period; a node that already exited is left as it is.
func (n *node) stop() NodeReport {
	select {
	case <-n.done:
		return n.exited(n.rep.Inputs)
	default:
	}
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	pid := n.cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGTERM)
	end := time.Now().Add(n.opts.Grace)
	t := time.NewTimer(n.opts.Grace)
	defer t.Stop()
	how := ""
	select {
	case <-n.done:
		how = "stopped by SIGTERM: " + exitText(n.waitErr)
		// the rest of its process group (children it started) gets the
		// rest of the grace
		for GroupRunning(pid) {
			if time.Now().After(end) {
				syscall.Kill(-pid, syscall.SIGKILL)
				how += fmt.Sprintf("; the processes it started were killed: they did not exit within %v of SIGTERM", n.opts.Grace)
				break
			}
			time.Sleep(readyPoll)
		}
	case <-t.C:
		syscall.Kill(-pid, syscall.SIGKILL)
		<-n.done
		how = fmt.Sprintf("killed: it did not exit within %v of SIGTERM", n.opts.Grace)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rep.Exit = how
	n.rep.Stderr = append([]string(nil), n.tail...)
	return n.rep
}

// SplitCommand splits a node's command line into its leading NAME=VALUE
// words (env) and the program with its arguments (argv), as a shell splits
// words: blanks separate them, '…' quotes everything up to the next ',
// "…" everything up to the next " but for \" and \\, and a backslash
// outside quotes escapes the next character. Nothing is expanded ($VAR,
// globs, ~). An error (wrapping ErrOptions) for an unterminated quote or
// no program.
func SplitCommand(line string) (env, argv []string, err error) {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
				i++
				w.WriteByte(line[i])
			default:
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, nil, fmt.Errorf("%w: node command %q: unterminated %c quote", ErrOptions, line, quote)
	}
	if in {
		words = append(words, w.String())
	}
	for len(words) > 0 && envWord.MatchString(words[0]) {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) == 0 {
		return nil, nil, fmt.Errorf("%w: node command %q: no program to run", ErrOptions, line)
	}
	return env, words, nil
}

// envWord is a NAME=VALUE word that sets the environment.
var envWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// exitText says how a process ended ("exit status 0" for a clean exit).
func exitText(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.ProcessState.String()
	}
	return err.Error()
}

// tailText renders the last lines of a node's stderr for an error.
func tailText(lines []string) string {
	if len(lines) == 0 {
		return "; nothing on its stderr"
	}
	return "; the last lines of its stderr: " + strings.Join(lines, " | ")
}

// line takes one line of the node's output.
func (n *node) line(s string, stderr bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.opts.Output != nil { // one line at a time, from the stdout and stderr readers
		fmt.Fprintf(n.opts.Output, "node: %s\n", s)
	}
	if n.rep.ReadyNs == 0 && len(n.lines) < 1024 {
		n.lines = append(n.lines, s)
	}
	if stderr {
		if len(n.tail) == nodeTailLines {
			copy(n.tail, n.tail[1:])
			n.tail = n.tail[:nodeTailLines-1]
		}
		n.tail = append(n.tail, s)
	}
}

// lineWriter splits a node's output into lines of at most nodeLineBytes
// (a longer one is cut, the rest of it dropped) and hands them to the
// node. Its buffer never grows past one line.
type lineWriter struct {
	n      *node
	stderr bool
	buf    []byte
	skip   bool // dropping the rest of a long line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if !w.skip {
			room := nodeLineBytes - len(w.buf)
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
				w.skip = true
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		w.n.line(strings.TrimRight(string(w.buf), "\r"), w.stderr)
		w.buf, w.skip = w.buf[:0], false
		rest = rest[i+1:]
	}
	return len(p), nil
}
