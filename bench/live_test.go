package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/live"
	"github.com/edr-lite/edr-lite/scripts"
)

// TestLiveStallSpeedGate is issue 35's "the recorder comes first" gate: a
// live client that subscribes to every topic and then reads nothing (its
// queue full, messages dropped) changes neither ingest nor the rules.
// Rounds with and without the stalled client alternate; per round it
// measures the p99.9 latency of IngestAt (a 10 kHz speed topic and a 1 kHz
// topic of 4 KiB messages, about 16 000 calls a round); the median over the
// rounds of stalled / idle stays within 1.5x. A threshold rule fires at every
// crossing at the crossing message's time in both (its trigger times do
// not change); its latency (from the ingest to OnTrigger, which the rule's
// 5 ms poll dominates) is reported. Speed gate: runs alone in CI's bench-gates step (./bench/).
func TestLiveStallSpeedGate(t *testing.T) {
	if testing.Short() {
		t.Skip("speed gate: not in -short mode")
	}
	if testutil.RaceEnabled {
		t.Skip("speed gate: the race detector's cost is no figure of the product (the gate runs in CI's bench step)")
	}
	rec, err := engine.New(engine.Config{CacheSize: 64 << 20, TopicBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	speed, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed", Type: ingest.Packed("s", "f32le speed\n")})
	if err != nil {
		t.Fatal(err)
	}
	big, err := rec.Discover(ingest.TopicInfo{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	type firing struct {
		at     time.Time
		timeNs int64
	}
	fired := make(chan firing, 1024)
	rule, err := scripts.LoadShipped("threshold", scripts.Options{
		Params:    map[string]string{"topic": "vehicle/speed", "high": "50", "low": "20", "max_per_minute": "10000"},
		OnTrigger: func(tr scripts.Trigger) { fired <- firing{time.Now(), tr.TimeNs} }})
	if err != nil {
		t.Fatal(err)
	}
	lv, err := scripts.StartLive(rec, []*scripts.Rule{rule}, scripts.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	srv, err := live.New(rec, live.Options{Queue: 256 << 10, StallTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); srv.Serve(ln) }()
	defer func() { srv.Close(); wg.Wait() }()
	url := "ws://" + ln.Addr().String() + "/"

	// round ingests for d and returns the p99.9 ingest latency and the
	// median trigger latency; every crossing must fire at its message's
	// time (the rule's trigger times do not change).
	wrongTimes := 0
	round := func(d time.Duration) (time.Duration, time.Duration) {
		sp, bigMsg := make([]byte, 4), make([]byte, 4096)
		var lat []time.Duration
		var trig []time.Duration
		start := time.Now()
		for i := 0; time.Since(start) < d; i++ {
			for j := range 100 { // 10 ms of data (speed at 10 kHz, big at 1 kHz), then a sleep
				v := float32(10)
				crossing := (i*100+j)%1000 == 500 // 10 a second
				if crossing {
					v = 100
				}
				binary.LittleEndian.PutUint32(sp, math.Float32bits(v))
				t0 := time.Now()
				ns := t0.UnixNano()
				rec.IngestAt(speed, ns, ns, sp)
				t1 := time.Now()
				lat = append(lat, t1.Sub(t0))
				if j%10 == 0 {
					rec.Ingest(big, 0, bigMsg)
					lat = append(lat, time.Since(t1))
				}
				if crossing {
					select {
					case f := <-fired:
						trig = append(trig, f.at.Sub(t0))
						if f.timeNs != ns {
							wrongTimes++
						}
					case <-time.After(time.Second):
						t.Fatal("the rule did not fire")
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		slices.Sort(lat)
		return lat[len(lat)*999/1000], testutil.Median(trig)
	}
	stalled := func() *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{live.Subprotocol}})
		if err != nil {
			t.Fatal(err)
		}
		// read the advertisement, subscribe to everything, then read nothing
		var chans []int
		for len(chans) < 2 {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Op       string `json:"op"`
				Channels []struct {
					ID int `json:"id"`
				} `json:"channels"`
			}
			json.Unmarshal(b, &m)
			for _, ch := range m.Channels {
				chans = append(chans, ch.ID)
			}
		}
		subs := []map[string]int{}
		for i, id := range chans {
			subs = append(subs, map[string]int{"id": i, "channelId": id})
		}
		b, _ := json.Marshal(map[string]any{"op": "subscribe", "subscriptions": subs})
		c.Write(ctx, websocket.MessageText, b)
		return c
	}
	const rounds = 10
	var idleLat, stallLat, idleTrig, stallTrig []time.Duration
	var pairs []float64 // per round: stalled p99.9 / idle p99.9
	for i := range rounds {
		for _, withClient := range []bool{i%2 == 0, i%2 != 0} {
			var c *websocket.Conn
			if withClient {
				c = stalled()
				time.Sleep(300 * time.Millisecond) // its queue fills
			}
			l, tr := round(1500 * time.Millisecond)
			if withClient {
				stallLat, stallTrig = append(stallLat, l), append(stallTrig, tr)
				c.CloseNow()
			} else {
				idleLat, idleTrig = append(idleLat, l), append(idleTrig, tr)
			}
		}
		pairs = append(pairs, float64(stallLat[i])/float64(idleLat[i]))
	}
	st := srv.Status()
	var dropped uint64
	for _, tp := range st.Topics {
		dropped += tp.Dropped
	}
	il, sl := testutil.Median(idleLat), testutil.Median(stallLat)
	it, stt := testutil.Median(idleTrig), testutil.Median(stallTrig)
	ratio := testutil.Median(pairs)
	t.Logf("ingest p99.9: idle %s, stalled client %s (median of the rounds' ratios %.2fx); trigger latency: idle %s, stalled %s (%.2fx); the stalled clients' drops: %d",
		il, sl, ratio, it, stt, float64(stt)/float64(it), dropped)
	if wrongTimes > 0 {
		t.Errorf("%d triggers fired at another time than their crossing message's", wrongTimes)
	}
	if dropped == 0 {
		t.Error("the stalled clients dropped nothing: they were not stalled")
	}
	if ratio > 1.5 {
		t.Errorf("ingest p99.9 with a stalled client is %.2fx the idle rounds' (%s vs %s): over 1.5x", ratio, sl, il)
	}
}
