package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// procCPU returns the CPU time (user + system) process pid has used.
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Skipf("needs /proc: %v", err)
	}
	// the fields after the command, which is in parentheses
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// BenchmarkLiveFourClients measures what four live clients subscribed to
// every demo topic cost the recorder: "edr-lite demo --live" runs (the
// demo vehicle: about 380 messages and 650 KiB a second), and its CPU time
// is read from /proc over phases of 3 s without clients and with four
// clients that subscribe to every channel and read everything,
// alternating; the figure is the median difference, in percent of one
// core ("core%"). Run with -benchtime=1x; docs/live.md has the figure.
func BenchmarkLiveFourClients(b *testing.B) {
	d := startLiveDemo(b, 45*time.Second)
	pid := d.cmd.Process.Pid
	time.Sleep(time.Second)
	const phase = 3 * time.Second
	var idle, busy []float64
	var received atomic.Int64
	for range 3 {
		c0 := procCPU(b, pid)
		time.Sleep(phase)
		idle = append(idle, float64(procCPU(b, pid)-c0)/float64(phase))

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				readAll(ctx, d.url, &received)
			}()
		}
		time.Sleep(300 * time.Millisecond) // connected and subscribed
		c0 = procCPU(b, pid)
		time.Sleep(phase)
		busy = append(busy, float64(procCPU(b, pid)-c0)/float64(phase))
		cancel()
		wg.Wait()
	}
	cost := 100 * (testutil.Median(busy) - testutil.Median(idle))
	b.ReportMetric(cost, "core%")
	b.ReportMetric(100*testutil.Median(idle), "idle-core%")
	b.Logf("four clients: %.1f%% of one core (recorder and vehicle alone %.1f%%, with the clients %.1f%%); %d messages received",
		cost, 100*testutil.Median(idle), 100*testutil.Median(busy), received.Load())
}

// readAll connects to url, subscribes to every channel and reads until ctx
// ends, counting messages.
func readAll(ctx context.Context, url string, n *atomic.Int64) {
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"foxglove.websocket.v1"}})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	next := 0
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			n.Add(1)
			continue
		}
		var m struct {
			Op       string `json:"op"`
			Channels []struct {
				ID int `json:"id"`
			} `json:"channels"`
		}
		json.Unmarshal(b, &m)
		if m.Op != "advertise" {
			continue
		}
		subs := []map[string]int{}
		for _, ch := range m.Channels {
			subs = append(subs, map[string]int{"id": next, "channelId": ch.ID})
			next++
		}
		req, _ := json.Marshal(map[string]any{"op": "subscribe", "subscriptions": subs})
		c.Write(ctx, websocket.MessageText, req)
	}
}
