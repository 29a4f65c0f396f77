package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T, network string) int {
	t.Helper()
	switch network {
	case "udp":
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
}

// TestE2EEventTimeOrder is issue 16's data-plane time acceptance through
// the binary: a UDP producer whose packets carry their event time in a
// packed field ("u64le t (ns)") and arrive out of order by up to 50 ms,
// every 40th held back 600 ms (beyond the 150 ms event_time_window). The
// dump holds every packet in event-time order except the late ones, and
// the late count — in the dump's accounting (info --json and info's text),
// in the trigger's answer, in status and in /metrics — is exactly the
// number of packets whose event time is below one before them in the file.
func TestE2EEventTimeOrder(t *testing.T) {
	port := freePort(t, "udp")
	httpPort := freePort(t, "tcp")
	r := startRecorder(t, "pre = \"20s\"\npost = \"0s\"\nevent_time_window = \"150ms\"",
		fmt.Sprintf(`http = "127.0.0.1:%d"

[[source.udp]]
listen = "127.0.0.1:%d"
topic = "imu"
schema_name = "demo.Imu"
layout = "u64le t (ns); u32le n"
event_time = "t"
`, httpPort, port), nil)

	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// the send schedule: packet i describes base + i*5ms and leaves
	// delay_i later (0..50 ms, every 40th 600 ms)
	const n = 400
	type send struct {
		at time.Duration
		i  int
	}
	var plan []send
	stragglers := 0
	for i := range n {
		delay := time.Duration((i*7919)%51) * time.Millisecond
		if i%40 == 20 {
			delay = 600 * time.Millisecond
			stragglers++
		}
		plan = append(plan, send{time.Duration(i)*5*time.Millisecond + delay, i})
	}
	sort.SliceStable(plan, func(a, b int) bool { return plan[a].at < plan[b].at })
	base := time.Now()
	for _, s := range plan {
		time.Sleep(time.Until(base.Add(s.at)))
		b := binary.LittleEndian.AppendUint64(nil, uint64(base.Add(time.Duration(s.i)*5*time.Millisecond).UnixNano()))
		if _, err := conn.Write(binary.LittleEndian.AppendUint32(b, uint32(s.i))); err != nil {
			t.Fatal(err)
		}
	}
	// the last packets arrive, then the dump (of everything: pre 20 s)
	time.Sleep(300 * time.Millisecond)
	code, out, errs := runBin(t, "trigger", "--socket", r.sock, "--reason", "order")
	if code != 0 {
		t.Fatalf("trigger: %d %s %s\n%s", code, out, errs, r.logs.String())
	}
	path := strings.TrimSpace(out)
	// the file: event times in order but for the late ones
	var evs []int64
	seen := map[uint32]bool{}
	for _, m := range readTyped(t, path) {
		if m.name != "imu" {
			continue
		}
		evs = append(evs, int64(binary.LittleEndian.Uint64(m.data)))
		seen[binary.LittleEndian.Uint32(m.data[8:])] = true
	}
	var late uint64
	var top int64
	for _, e := range evs {
		if e < top {
			late++
		}
		top = max(top, e)
	}
	if len(evs) != n || len(seen) != n {
		t.Fatalf("%d messages (%d distinct) in the dump, want %d", len(evs), len(seen), n)
	}
	t.Logf("%d stragglers sent 600 ms late; %d messages out of event-time order in the dump", stragglers, late)
	if late < uint64(stragglers) || late > uint64(stragglers)+5 {
		t.Errorf("%d messages out of order, want the %d stragglers (and at most 5 more on a stalled machine)", late, stragglers)
	}
	if !strings.Contains(errs, fmt.Sprintf("late     %d written out of event-time order", late)) {
		t.Errorf("trigger's answer does not count %d late:\n%s", late, errs)
	}

	// info --json and info's text
	code, js, _ := runBin(t, "info", "--json", path)
	var in struct {
		Topics []struct {
			Name             string `json:"name"`
			Order            string `json:"order"`
			Late             uint64 `json:"late"`
			EventTimeMissing uint64 `json:"event_time_missing"`
			EventTime        string `json:"event_time"`
			EventTimeUnit    string `json:"event_time_unit"`
			EventFirstNs     int64  `json:"event_first_ns"`
			EventLastNs      int64  `json:"event_last_ns"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(js), &in); code != 0 || err != nil || len(in.Topics) != 1 {
		t.Fatalf("info --json: %d %v\n%s", code, err, js)
	}
	if tp := in.Topics[0]; tp.Order != "event" || tp.Late != late || tp.EventTimeMissing != 0 || tp.EventTime != "t" || tp.EventTimeUnit != "ns" {
		t.Errorf("info --json topic %+v, want order event by t in ns (the layout's unit), late %d", tp, late)
	}
	lo, hi := slices.Min(evs), slices.Max(evs)
	if tp := in.Topics[0]; tp.EventFirstNs != lo || tp.EventLastNs != hi {
		t.Errorf("info --json event span %d..%d, want the dump's least and greatest event time %d..%d", tp.EventFirstNs, tp.EventLastNs, lo, hi)
	}
	if _, txt, _ := runBin(t, "info", path); !strings.Contains(txt, fmt.Sprintf("event order: imu by t (ns): events %s to %s (%s), %d late (beyond the reorder bound",
		fmtTime(lo), fmtTime(hi), fmtDur(hi-lo), late)) {
		t.Errorf("info does not say it:\n%s", txt)
	}
	// status and /metrics
	_, st, _ := runBin(t, "status", "--socket", r.sock, "--json")
	var s struct {
		Dumps struct {
			Late      uint64 `json:"late"`
			Rewritten uint64 `json:"rewritten"`
		} `json:"dumps"`
	}
	if err := json.Unmarshal([]byte(st), &s); err != nil || s.Dumps.Late != late {
		t.Errorf("status dumps.late %d (%v), want %d", s.Dumps.Late, err, late)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("edr_dump_late_messages_total %d\n", late); !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %q", want)
	}
	// frames written again without payloads producers overwrote: the
	// status's count is the metric's
	if want := fmt.Sprintf("edr_dump_rewritten_total %d\n", s.Dumps.Rewritten); !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %q (status dumps.rewritten %d)", want, s.Dumps.Rewritten)
	}
}

// TestConfigCheckEventTime: config check checks event_time as run does: a
// path the table's layout does not have, a unit that is no unit, a unit
// without a field, each exit 1 naming the file, line, key and cause; a
// [[topic]] event_time without a type there passes (it is checked against
// the type the topic declares when it is discovered).
func TestConfigCheckEventTime(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"[[topic]]\nmatch = \"imu\"\nlayout = \"u64le t (ns)\"\nevent_time = \"stamp\"\n", ":7: topic[0].event_time: no such field: \"stamp\": no field stamp"},
		{"[[source.udp]]\nlisten = \":30490\"\nlayout = \"u64le t\"\nevent_time = \"t\"\nevent_time_unit = \"fortnights\"\n", ":8: source.udp[0].event_time_unit: no such field: event time unit \"fortnights\""},
		{"[[topic]]\nmatch = \"imu\"\nevent_time_unit = \"ns\"\n", ":6: topic[0].event_time_unit: event_time_unit without event_time"},
		{"[[topic]]\nmatch = \"imu\"\nlayout = \"u64le t\"\nevent_time = \"t\"\n", ":7: topic[0].event_time: no such field: event time \"t\": unit \"\" is not a time unit"},
		{"[recorder]\nevent_time_window = \"0s\"\n", "recorder.event_time_window"},
		{"[[topic]]\nmatch = \"imu\"\nevent_time = \"header.stamp\"\nevent_time_unit = \"stamp\"\n", ""},
	} {
		cfg := filepath.Join(dir, "edr.toml")
		os.WriteFile(cfg, []byte("[recorder]\ndump_dir = \"/tmp/d\"\n\n"+strings.Replace(c.body, "[recorder]\n", "", 1)), 0o600)
		code, out, errs := runBin(t, "config", "check", cfg)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%s: exit %d %s %s, want 0", c.body, code, out, errs)
		case c.want != "" && (code != 1 || !strings.Contains(errs, c.want)):
			t.Errorf("%s: exit %d\n%s%s\nwant 1 and %q", c.body, code, out, errs, c.want)
		}
	}
}

// TestCatTimeEvent: cat --time event shows each message's event time, read
// from the field the dump says it ordered the topic by; --time producer
// the producer's; a bad value is a usage error.
func TestCatTimeEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "imu.pack")
	typ := ingest.Packed("demo.Imu", "u64le t (ns); f32le ax")
	w, err := pack.Create(path, pack.WriterOptions{Writer: "test", CreatedNs: t0 - 1e9})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		capNs := t0 + int64(i)*1e9
		w.SetTopicType("imu", "", typ, capNs)
		d := binary.LittleEndian.AppendUint64(nil, uint64(capNs-250e6))
		if err := w.Add("imu", "", nil, capNs-100e6, capNs, binary.LittleEndian.AppendUint32(d, 0)); err != nil {
			t.Fatal(err)
		}
	}
	w.SetDumpInfo(dumpinfo.Info{Topics: []dumpinfo.TopicAccount{{Topic: pack.Topic("imu", ""), Messages: 3,
		Order: dumpinfo.OrderEvent, EventTime: "t", EventTimeUnit: "ns"}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for mode, off := range map[string]int64{"capture": 0, "producer": -100e6, "event": -250e6} {
		code, out, errs := runBin(t, "cat", "--jsonl", "--payload", "none", "--time", mode, path)
		var got []int64
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var j struct {
				TS int64 `json:"ts"`
			}
			json.Unmarshal([]byte(line), &j)
			got = append(got, j.TS)
		}
		if code != 0 || len(got) != 3 || got[0] != t0+off || got[2] != t0+2e9+off {
			t.Errorf("--time %s: exit %d, times %v (stderr %q), want t0%+d ...", mode, code, got, errs, off)
		}
	}
	if code, _, errs := runBin(t, "cat", "--time", "gps", path); code != 2 || !strings.Contains(errs, `--time "gps"`) {
		t.Errorf("--time gps: exit %d, %q", code, errs)
	}
}
