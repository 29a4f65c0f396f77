package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/internal/demo"
)

// liveClientDir returns live/testdata/node, where client.mjs runs, or
// skips the test when node, its WebSocket or the npm packages are missing
// (.ci/run installs them with npm ci).
func liveClientDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("needs node for the reference client: %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "live", "testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"@foxglove/ws-protocol", "@mcap/support", "@foxglove/rosmsg", "@foxglove/rosmsg2-serialization"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			t.Skipf("needs `npm ci` in %s (%s): %v", dir, p, err)
		}
	}
	if out, err := exec.Command("node", "--experimental-websocket", "-e", "if (typeof WebSocket !== 'function') process.exit(3)").CombinedOutput(); err != nil {
		t.Skipf("node has no WebSocket: %v %s", err, out)
	}
	return dir
}

// liveDemo is a running "edr-lite demo --live".
type liveDemo struct {
	cmd  *exec.Cmd
	url  string
	dir  string
	out  bytes.Buffer
	errb bytes.Buffer
	done chan error
}

// startLiveDemo runs the demo with the live server on a free port for
// duration and returns once it printed its URL.
func startLiveDemo(t testing.TB, duration time.Duration) *liveDemo {
	t.Helper()
	d := &liveDemo{dir: t.TempDir(), done: make(chan error, 1)}
	d.cmd = exec.Command(edrBinary(t), "demo", "--dir", d.dir, "--duration", duration.String(), "--live", "--live-addr", "127.0.0.1:0")
	pr, pw := io.Pipe()
	d.cmd.Stdout, d.cmd.Stderr = io.MultiWriter(&d.out, pw), &d.errb
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := regexp.MustCompile(`^live: (ws://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case d.url = <-urls:
	case <-time.After(20 * time.Second):
		t.Fatalf("demo --live printed no URL\n%s\n%s", d.out.String(), d.errb.String())
	}
	return d
}

// wait waits for the demo to end and returns its dumps (the operator's
// mark and the hard brake are one dump when their windows meet in time,
// else two).
func (d *liveDemo) wait(t *testing.T) []string {
	t.Helper()
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Fatalf("demo: %v\n%s\n%s", err, d.out.String(), d.errb.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("demo did not end")
	}
	dumps, _ := filepath.Glob(filepath.Join(d.dir, "*.pack"))
	if len(dumps) == 0 || len(dumps) > 2 {
		t.Fatalf("dumps %v\n%s", dumps, d.out.String())
	}
	return dumps
}

// nodeClientOut is what client.mjs prints.
type nodeClientOut struct {
	ServerInfo struct {
		Capabilities []string `json:"capabilities"`
	} `json:"serverInfo"`
	Topics map[string]*struct {
		Channel struct {
			Encoding       string `json:"encoding"`
			SchemaName     string `json:"schemaName"`
			SchemaEncoding string `json:"schemaEncoding"`
		} `json:"channel"`
		Messages     int               `json:"messages"`
		NS           []string          `json:"ns"`
		Decoded      []json.RawMessage `json:"decoded"`
		DecodeErrors []string          `json:"decodeErrors"`
	} `json:"topics"`
	Lost        map[string]uint64   `json:"lost"`
	Errors      []string            `json:"errors"`
	Closed      *struct{ Code int } `json:"closed"`
	Published   int                 `json:"published"`
	FirstTimeNs string              `json:"firstTimeNs"`
}

// runNodeClient runs client.mjs against url for seconds; connected (when
// not nil) is closed once the client has the server's serverInfo.
func runNodeClient(dir, url string, seconds int, connected chan struct{}, args ...string) (*nodeClientOut, error) {
	cmd := exec.Command("node", append([]string{"--experimental-websocket", "client.mjs", url, strconv.Itoa(seconds)}, args...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if connected != nil {
		pr, pw := io.Pipe()
		cmd.Stderr = io.MultiWriter(&errb, pw)
		go func() {
			sc := bufio.NewScanner(pr)
			once := sync.Once{}
			for sc.Scan() {
				if sc.Text() == "connected" {
					once.Do(func() { close(connected) })
				}
			}
		}()
		defer pw.Close()
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node client.mjs: %v\n%s", err, errb.String())
	}
	var res nodeClientOut
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("client.mjs output: %v\n%.2000s", err, out)
	}
	return &res, nil
}

// dumpTimes returns, per topic, the capture times of a dump's messages.
func dumpTimes(t *testing.T, path string) map[string][]int64 {
	t.Helper()
	code, out, errs := runBin(t, "cat", "--jsonl", path)
	if code != 0 {
		t.Fatalf("cat --jsonl: %d %s", code, errs)
	}
	got := map[string][]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Topic string `json:"topic"`
			TS    int64  `json:"ts"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("cat --jsonl line %q: %v", line, err)
		}
		got[m.Topic] = append(got[m.Topic], m.TS)
	}
	return got
}

// TestLiveDemoFoxgloveClient is issue 35's acceptance test, through the
// built binary and the protocol's reference client: "demo --live" records
// the demo vehicle while @foxglove/ws-protocol's FoxgloveClient (client.mjs,
// Node's WebSocket) receives the advertisements with their schemas,
// subscribes to every topic, publishes a ROS 2 topic and an operator mark,
// and decodes every message it receives with the decoders Foxglove uses
// (protobuf descriptor sets through @mcap/support, JSON.parse, ROS 2 CDR);
// per topic, the messages it received within the dump's window are the
// dump's (the recorder's ingest over that interval) — same count, same
// capture times — within what the server told it it lost; the mark
// triggered a dump. Meanwhile a second client joins 10 s in with a 5 s
// history and gets those 5 s, in order, then live messages with no gap and
// no duplicate; and hostile clients (malformed JSON, unknown ops, a huge
// frame, a subscription flood, 1000 idle connections) each get an error
// or a close while the recorder records on.
func TestLiveDemoFoxgloveClient(t *testing.T) {
	dir := liveClientDir(t)
	d := startLiveDemo(t, 16*time.Second)
	start := time.Now()

	var wg sync.WaitGroup
	var full, late *nodeClientOut
	var fullErr, lateErr error
	connected := make(chan struct{})
	wg.Add(2)
	go func() { // from the start: everything, with 60 s of history
		defer wg.Done()
		full, fullErr = runNodeClient(dir, d.url, 14, connected, "--history", "60", "--publish", "20")
	}()
	go func() { // 10 s in, with a 5 s history
		defer wg.Done()
		time.Sleep(10*time.Second - time.Since(start))
		late, lateErr = runNodeClient(dir, d.url, 4, nil, "--history", "5")
	}()
	select { // the hostile clients come once the full client is in
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Error("the reference client did not connect within 10 s")
	}
	hostileLiveClients(t, d.url)
	wg.Wait()
	dumps := d.wait(t)
	if fullErr != nil || lateErr != nil {
		t.Fatalf("clients: %v; %v", fullErr, lateErr)
	}

	// the full client: every topic advertised with its schema, decoded
	if len(full.Errors) > 0 || full.Closed != nil {
		t.Errorf("client errors %q, closed %+v", full.Errors, full.Closed)
	}
	if !strings.Contains(strings.Join(full.ServerInfo.Capabilities, ","), "clientPublish") {
		t.Errorf("capabilities %q", full.ServerInfo.Capabilities)
	}
	want := map[string][3]string{
		demo.TopicSpeed: {"json", "edr.demo.Speed", "jsonschema"}, demo.TopicBrake: {"json", "edr.demo.BrakePedal", "jsonschema"},
		demo.TopicIMU: {"json", "edr.demo.IMU", "jsonschema"}, demo.TopicCamera: {"protobuf", "foxglove.CompressedImage", "protobuf"},
		demo.TopicCalibration: {"json", "edr.demo.Calibration", "jsonschema"}, "operator/level": {"cdr", "edr_test/msg/Level", "ros2msg"},
		"operator/mark": {"json", "edr.live.Mark", "jsonschema"},
	}
	for name, w := range want {
		tp := full.Topics[name]
		if tp == nil {
			t.Errorf("topic %s not advertised", name)
			continue
		}
		if got := [3]string{tp.Channel.Encoding, tp.Channel.SchemaName, tp.Channel.SchemaEncoding}; got != w {
			t.Errorf("%s advertised as %q, want %q", name, got, w)
		}
		if tp.Messages == 0 || len(tp.DecodeErrors) > 0 || len(tp.NS) != tp.Messages {
			t.Errorf("%s: %d messages, decode errors %q", name, tp.Messages, tp.DecodeErrors)
		}
	}
	// the ROS 2 messages it published came back decoded as sent
	if lv := full.Topics["operator/level"]; lv != nil {
		if lv.Messages != 20 {
			t.Errorf("operator/level: %d messages back of 20", lv.Messages)
		}
		for i, raw := range lv.Decoded {
			var m struct {
				Stamp struct{ Sec int64 } `json:"stamp"`
				Level float64             `json:"level"`
				Label string              `json:"label"`
			}
			json.Unmarshal(raw, &m)
			if m.Stamp.Sec != 1800000000+int64(i) || m.Level != float64(i)*0.5-1 || m.Label != fmt.Sprintf("tank %d", i) {
				t.Errorf("operator/level %d decoded %s", i, raw)
				break
			}
		}
	}
	// speed: every sequence number once, in order
	checkSpeedSeqs(t, "full client", full)

	// per topic, each dump's messages are what the client received in
	// the same interval
	marked := false
	for _, dump := range dumps {
		checkDumpAgainstClient(t, dump, full)
		for _, tr := range readInfoJSON(t, dump).Triggers {
			marked = marked || tr.Source == "live" && tr.Reason == "cone on the road"
		}
	}
	if !marked {
		t.Errorf("the operator's mark triggered no dump: %v", dumps)
	}

	// the late client: 5 s of history, then live
	if len(late.Errors) > 0 || late.Closed != nil {
		t.Errorf("late client errors %q, closed %+v", late.Errors, late.Closed)
	}
	sp := late.Topics[demo.TopicSpeed]
	if sp == nil || len(sp.NS) == 0 || late.FirstTimeNs == "" {
		t.Fatalf("late client got no speed")
	}
	first, _ := strconv.ParseInt(sp.NS[0], 10, 64)
	at, _ := strconv.ParseInt(late.FirstTimeNs, 10, 64)
	if h := time.Duration(at - first); h < 4500*time.Millisecond || h > 5500*time.Millisecond {
		t.Errorf("late client's history starts %s before it connected, want 5s", h)
	}
	checkSpeedSeqs(t, "late client", late)
}

// checkDumpAgainstClient compares, per topic, the capture times of a
// dump's messages with those the client received between the dump's first
// and last: the same, but for what the client was told it lost.
func checkDumpAgainstClient(t *testing.T, dump string, full *nodeClientOut) {
	t.Helper()
	for topic, dts := range dumpTimes(t, dump) {
		tp := full.Topics[topic]
		if tp == nil {
			t.Errorf("dump topic %s never reached the client", topic)
			continue
		}
		lo, hi := dts[0], dts[len(dts)-1]
		got := map[int64]int{}
		n := 0
		for _, s := range tp.NS {
			ns, _ := strconv.ParseInt(s, 10, 64)
			if ns >= lo && ns <= hi {
				got[ns]++
				n++
			}
		}
		missing := 0
		for _, ns := range dts {
			if got[ns] > 0 {
				got[ns]--
			} else {
				missing++
			}
		}
		told := full.Lost[topic]
		if uint64(missing) > told || n-(len(dts)-missing) != 0 {
			t.Errorf("%s: %s: dump %d messages in [%d, %d], client %d there, %d of the dump's missing (told %d lost)",
				filepath.Base(dump), topic, len(dts), lo, hi, n, missing, told)
		}
	}
}

// checkSpeedSeqs checks the speed messages a client decoded: the demo's
// sequence numbers, each once, in order, capture times never going back.
func checkSpeedSeqs(t *testing.T, who string, c *nodeClientOut) {
	t.Helper()
	sp := c.Topics[demo.TopicSpeed]
	if sp == nil || len(sp.Decoded) < 100 {
		t.Errorf("%s: too few speed messages", who)
		return
	}
	var prev int64 = -1
	var prevNs int64
	for i, raw := range sp.Decoded {
		var m struct{ Seq int64 }
		json.Unmarshal(raw, &m)
		ns, _ := strconv.ParseInt(sp.NS[i], 10, 64)
		if prev >= 0 && m.Seq != prev+1 || ns < prevNs {
			t.Errorf("%s: speed message %d has seq %d after %d (gap or duplicate), time %d after %d; lost told %d",
				who, i, m.Seq, prev, ns, prevNs, c.Lost[demo.TopicSpeed])
			return
		}
		prev, prevNs = m.Seq, ns
	}
}

// hostileLiveClients tries the live server with malformed JSON, unknown
// ops, a huge frame, a subscription flood and 1000 idle connections: each
// must get an error status or a close.
func hostileLiveClients(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"foxglove.websocket.v1"}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		c.SetReadLimit(64 << 20)
		return c
	}
	// until reads until a status of level 2 containing want, or a close
	until := func(c *websocket.Conn, want string) (string, error) {
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return "", err
			}
			if typ != websocket.MessageText {
				continue
			}
			var s struct {
				Op      string `json:"op"`
				Level   int    `json:"level"`
				Message string `json:"message"`
			}
			json.Unmarshal(b, &s)
			if s.Op == "status" && s.Level == 2 && strings.Contains(s.Message, want) {
				return s.Message, nil
			}
		}
	}
	for _, tc := range []struct{ send, want string }{
		{`{"op":"subscribe","subscriptions":[{"id":1,`, "malformed JSON"},
		{`{"op":"teleport"}`, `unknown op "teleport"`},
		{`{"op":"subscribe","subscriptions":[{"id":"x","channelId":1}]}`, "want an integer"},
	} {
		c := dial()
		if err := c.Write(ctx, websocket.MessageText, []byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		if _, err := until(c, tc.want); err != nil {
			t.Errorf("%s: no error status %q: %v", tc.send, tc.want, err)
		}
		c.CloseNow()
	}
	// a huge frame: closed with 1009
	c := dial()
	c.Write(ctx, websocket.MessageBinary, make([]byte, 4<<20))
	if _, err := until(c, "\x00never"); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("huge frame: %v, want a close 1009", err)
	}
	c.CloseNow()
	// a subscription flood: a request of 5000 entries is refused, then
	// subscriptions to channels that do not exist until the client is
	// disconnected for its bad requests
	c = dial()
	subs := make([]map[string]int, 5000)
	for i := range subs {
		subs[i] = map[string]int{"id": i, "channelId": 1}
	}
	b, _ := json.Marshal(map[string]any{"op": "subscribe", "subscriptions": subs})
	c.Write(ctx, websocket.MessageText, b)
	if _, err := until(c, "at most 4096"); err != nil {
		t.Errorf("subscribe with 5000 entries: %v", err)
	}
	go func() {
		for i := range 2000 {
			if c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"op":"subscribe","subscriptions":[{"id":%d,"channelId":%d}]}`, i, 100000+i)) != nil {
				return
			}
		}
	}()
	if _, err := until(c, "\x00never"); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("subscription flood: %v, want a close 1008", err)
	}
	c.CloseNow()
	// 1000 idle connections: every one is closed (at once beyond the
	// limit, after the handshake timeout within it)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/")
	conns := make([]net.Conn, 0, 1000)
	for range 1000 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(conns), err)
		}
		conns = append(conns, nc)
	}
	closed := 0
	for _, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == io.EOF || err != nil && !os.IsTimeout(err) {
			closed++
		}
		nc.Close()
	}
	if closed != len(conns) {
		t.Errorf("%d of %d idle connections closed by the server", closed, len(conns))
	}
}
