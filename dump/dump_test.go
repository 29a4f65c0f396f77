package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/pack"
)

const (
	ms = int64(time.Millisecond)
	t0 = int64(1_700_000_000_000_000_000) // a UNIX time in ns
)

// rigConfig is a recorder's and its dumper's configuration (tests only).
type rigConfig struct {
	Rec  engine.Config
	Dump Config
}

// rig is a recorder with its dumper, as the daemon wires them.
type rig struct {
	*engine.Recorder
	*Dumper
}

// Status is the dumper's.
func (r *rig) Status() Status { return r.Dumper.Status() }

// Close stops the dumper, then closes the recorder.
func (r *rig) Close() error {
	r.Dumper.Stop()
	return r.Recorder.Close()
}

// newRig makes a recorder and a dumper (not started).
func newRig(t *testing.T, cfg rigConfig) (*rig, error) {
	t.Helper()
	rec, err := engine.New(cfg.Rec)
	if err != nil {
		return nil, err
	}
	d, err := New(rec, cfg.Dump)
	if err != nil {
		rec.Close()
		return nil, err
	}
	r := &rig{rec, d}
	t.Cleanup(func() { r.Close() })
	return r, nil
}

// dumpRecorder makes a started recorder writing dumps into a temp dir, on a
// virtual clock at t0.
func dumpRecorder(t *testing.T, cfg rigConfig) (*rig, *clock.Virtual, string) {
	t.Helper()
	vc := clock.NewVirtual(t0)
	cfg.Rec.Clock = vc
	if cfg.Rec.CacheSize == 0 {
		cfg.Rec.CacheSize = 4 << 20
	}
	if cfg.Rec.TopicBytes == 0 {
		cfg.Rec.TopicBytes = 256 << 10
	}
	if cfg.Dump.Dir == "" {
		cfg.Dump.Dir = filepath.Join(t.TempDir(), "dumps")
	}
	cfg.Dump.PollInterval = time.Millisecond
	r, err := newRig(t, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r, vc, cfg.Dump.Dir
}

// msgAt is one message as the test sees it.
type msgAt struct {
	topic string
	ns    int64
	data  string
}

// feed ingests, for every topic, one message every step from..to (clock time),
// with payload "topic@offset_ms".
func feed(r *rig, vc *clock.Virtual, ids map[string]ingest.TopicID, from, to, step int64) {
	for ns := from; ns <= to; ns += step {
		vc.Set(ns)
		for name, id := range ids {
			r.Ingest(id, ns-1, []byte(fmt.Sprintf("%s@%d", name, (ns-t0)/ms)))
		}
	}
}

// readDump returns the messages of a pack dump and its dump info.
func readDump(t *testing.T, path string) ([]msgAt, dumpinfo.Info) {
	t.Helper()
	pr, err := pack.Open(path)
	if err != nil {
		t.Fatalf("pack.Open(%s): %v", path, err)
	}
	defer pr.Close()
	var out []msgAt
	f := pack.NewFrame(0, 0)
	for {
		err := pr.ReadInto(f)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		for i := range f.Len() {
			m := f.Message(i)
			out = append(out, msgAt{topic: m.Name, ns: m.DoneTs, data: string(f.Data(i))})
			if m.GenTs != m.DoneTs-1 {
				t.Fatalf("gen_ts %d, capture %d", m.GenTs, m.DoneTs)
			}
		}
	}
	info, ok := pr.DumpInfo()
	if !ok {
		t.Fatalf("%s has no dump info", path)
	}
	return out, info
}

func discover(t *testing.T, r *rig, names ...string) map[string]ingest.TopicID {
	t.Helper()
	ids := make(map[string]ingest.TopicID)
	for _, n := range names {
		id, err := r.Discover(ingest.TopicInfo{Name: n, Type: ingest.Raw("test/" + n)})
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = id
	}
	return ids
}

func wait(t *testing.T, r *rig, id TriggerID) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%d): %v", id, err)
	}
	return res
}

// window returns, per topic, the offsets (ms from t0) every step ms in
// [from, to] that a dump must hold, in capture order (topics in order for
// equal times).
func expectWindow(topics []string, from, to, step int64, ranges map[string][2]int64) []string {
	var want []string
	for off := from; off <= to; off += step {
		for _, tp := range topics {
			rg, ok := ranges[tp]
			if ok && off >= rg[0] && off <= rg[1] {
				want = append(want, fmt.Sprintf("%s@%d", tp, off))
			}
		}
	}
	return want
}

func datas(ms []msgAt) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.data
	}
	return out
}

func TestDumpWindowExact(t *testing.T) {
	r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(500 * time.Millisecond), Guard: new(100 * time.Millisecond), Topics: []engine.TopicOverride{
		{Match: "front", OnlyFront: true},
		{Match: "back", OnlyBack: true},
		{Match: "long", Pre: new(2 * time.Second)},
	}}})
	ids := discover(t, r, "a", "front", "back", "long")
	feed(r, vc, ids, t0, t0+3000*ms, 10*ms)
	vc.Set(t0 + 3000*ms)
	id, err := r.Trigger(TriggerParams{Reason: "hard brake", Params: map[string]string{"speed": "12"}})
	if err != nil {
		t.Fatal(err)
	}
	// Feed up to the due time (T + post + guard); the dumper must write
	// before the ring's retention (pre + max post + 2*guard) moves past.
	feed(r, vc, ids, t0+3010*ms, t0+3600*ms, 10*ms)
	res := wait(t, r, id)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if want := filepath.Join(dir, "20231114T221323.000000000Z_hard-brake_1.pack"); res.Path != want {
		t.Fatalf("path %q, want %q", res.Path, want)
	}
	got, info := readDump(t, res.Path)
	want := expectWindow([]string{"a", "back", "front", "long"}, 1000, 3500, 10, map[string][2]int64{
		"a": {2000, 3500}, "front": {2000, 3000}, "back": {3000, 3500}, "long": {1000, 3500},
	})
	gd := datas(got)
	if strings.Join(gd, " ") != strings.Join(sortByTimeThenID(r, want), " ") {
		t.Fatalf("dump holds %d messages, want %d\n got %v\nwant %v", len(gd), len(want), head(gd), head(sortByTimeThenID(r, want)))
	}
	if res.Messages != uint64(len(want)) || res.Lost != 0 || res.Bytes == 0 {
		t.Fatalf("result %+v", res)
	}
	if len(info.Triggers) != 1 || info.Triggers[0].Reason != "hard brake" || info.Triggers[0].Params["speed"] != "12" || info.Triggers[0].TimeNs != t0+3000*ms {
		t.Fatalf("trigger records %+v", info.Triggers)
	}
	acct := map[string]dumpinfo.TopicAccount{}
	for _, a := range info.Topics {
		acct[a.Topic] = a
	}
	if a := acct["front#"]; a.Messages != 101 || a.FirstNs != t0+2000*ms || a.LastNs != t0+3000*ms || a.Type != "test/front" {
		t.Fatalf("front account %+v", a)
	}
	if a := acct["long#"]; a.Messages != 251 || a.Overwritten != 0 {
		t.Fatalf("long account %+v", a)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Fatalf("left .tmp files: %v", tmps)
	}
}

// sortByTimeThenID orders "topic@ms" strings as the dumper merges them:
// by time, then topic id.
func sortByTimeThenID(r *rig, in []string) []string {
	ids := map[string]ingest.TopicID{}
	for _, st := range r.Topics() {
		ids[st.Info.Name] = st.ID
	}
	out := append([]string(nil), in...)
	key := func(s string) (int64, ingest.TopicID) {
		var off int64
		i := strings.IndexByte(s, '@')
		fmt.Sscan(s[i+1:], &off)
		return off, ids[s[:i]]
	}
	for i := 1; i < len(out); i++ { // insertion sort: small inputs
		for j := i; j > 0; j-- {
			a, ai := key(out[j-1])
			b, bi := key(out[j])
			if a < b || a == b && ai < bi {
				break
			}
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

func head(s []string) []string {
	if len(s) > 8 {
		return append(s[:4:4], append([]string{"..."}, s[len(s)-4:]...)...)
	}
	return s
}

func TestDumpKeepLastAndTopicSubset(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(0 + time.Millisecond), Guard: new(time.Duration(0)), Topics: []engine.TopicOverride{{Match: "tf_static", KeepLast: 2}}}})
	ids := discover(t, r, "tf_static", "speed", "other")
	// Latched topic: three messages at start, never again.
	for i := range 3 {
		vc.Set(t0 + int64(i)*ms)
		r.Ingest(ids["tf_static"], t0+int64(i)*ms-1, []byte(fmt.Sprint("tf", i)))
	}
	for ns := t0 + 100*ms; ns <= t0+10_000*ms; ns += 100 * ms {
		vc.Set(ns)
		r.Ingest(ids["speed"], ns-1, []byte(fmt.Sprint("speed@", (ns-t0)/ms)))
		r.Ingest(ids["other"], ns-1, []byte("x"))
	}
	id, err := r.Trigger(TriggerParams{Reason: "subset", Topics: []string{"tf_*", "speed"}})
	if err != nil {
		t.Fatal(err)
	}
	vc.Set(t0 + 10_010*ms)
	res := wait(t, r, id)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	got, info := readDump(t, res.Path)
	var names []string
	for _, m := range got {
		names = append(names, m.data)
	}
	want := "tf1 tf2 speed@9000 speed@9100 speed@9200 speed@9300 speed@9400 speed@9500 speed@9600 speed@9700 speed@9800 speed@9900 speed@10000"
	if strings.Join(names, " ") != want {
		t.Fatalf("dump = %v\nwant %v", names, want)
	}
	if len(info.Topics) != 2 {
		t.Fatalf("accounted topics %+v, want tf_static and speed only", info.Topics)
	}
}

func TestDumpPolicies(t *testing.T) {
	f := func(policy Policy, wantFiles int) {
		t.Helper()
		r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Second), Guard: new(100 * time.Millisecond)}, Dump: Config{Policy: policy}})
		ids := discover(t, r, "a")
		feed(r, vc, ids, t0, t0+2000*ms, 10*ms)
		id1, err := r.Trigger(TriggerParams{Reason: "first"})
		if err != nil {
			t.Fatal(err)
		}
		feed(r, vc, ids, t0+2010*ms, t0+2100*ms, 10*ms)
		id2, err := r.Trigger(TriggerParams{Reason: "second", Source: "lua", Rule: "r2"})
		if err != nil {
			t.Fatal(err)
		}
		feed(r, vc, ids, t0+2110*ms, t0+3200*ms, 10*ms)
		res1, res2 := wait(t, r, id1), wait(t, r, id2)
		if res1.Err != nil || res2.Err != nil {
			t.Fatal(res1.Err, res2.Err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
		if len(files) != wantFiles {
			t.Fatalf("%s: %d files %v, want %d", policy, len(files), files, wantFiles)
		}
		got2, info2 := readDump(t, res2.Path)
		// The second trigger still gets its full pre window: dumps never clear rings.
		if got2[0].ns > t0+1100*ms || got2[len(got2)-1].ns != t0+3100*ms {
			t.Fatalf("%s: second dump covers %d..%d ms", policy, (got2[0].ns-t0)/ms, (got2[len(got2)-1].ns-t0)/ms)
		}
		if policy == PolicyMerge {
			if res1.Path != res2.Path || len(info2.Triggers) != 2 || info2.Triggers[1].Rule != "r2" || len(res1.Reasons) != 2 {
				t.Fatalf("merge: %+v / %+v, triggers %+v", res1, res2, info2.Triggers)
			}
			if got2[0].ns != t0+1000*ms || len(got2) != 211 {
				t.Fatalf("merged dump: %d messages from %d ms", len(got2), (got2[0].ns-t0)/ms)
			}
			if r.Status().TriggersCoalesced != 1 {
				t.Fatalf("status %+v", r.Status())
			}
		}
	}
	f(PolicyMerge, 1)
	f(PolicySeparate, 2)
}

func TestDumpRateLimit(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(10 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{Policy: PolicySeparate, MaxPerMinute: 2}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	for i := range 3 {
		_, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("t", i), Source: dumpinfo.SourceLua})
		if want := i == 2; errors.Is(err, ErrRateLimited) != want {
			t.Fatalf("trigger %d: %v", i, err)
		}
	}
	vc.Set(t0 + 61*int64(time.Second))
	if _, err := r.Trigger(TriggerParams{Reason: "later", Source: dumpinfo.SourceLua}); err != nil {
		t.Fatalf("after a minute: %v", err)
	}
	if s := r.Status(); s.TriggersRateLimited != 1 {
		t.Fatalf("rate limited = %d", s.TriggersRateLimited)
	}
}

func TestTriggerErrors(t *testing.T) {
	r, err := newRig(t, rigConfig{Rec: engine.Config{CacheSize: 1 << 20, TopicBytes: 64 << 10, Clock: clock.NewVirtual(t0)}, Dump: Config{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	discover(t, r, "a")
	if _, err := r.Trigger(TriggerParams{Reason: "x"}); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("before Start: %v", err)
	}
	r.Start()
	if _, err := r.Trigger(TriggerParams{}); err == nil {
		t.Fatal("empty reason accepted")
	}
	if _, err := r.Trigger(TriggerParams{Reason: "x", Topics: []string{"nope"}}); !errors.Is(err, ErrNoTopics) {
		t.Fatalf("no topic: %v", err)
	}
	r.Stop()
	if _, err := r.Trigger(TriggerParams{Reason: "x"}); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("after Stop: %v", err)
	}
	// The dump directory is required and must be usable.
	var ce *ConfigError
	if _, err := newRig(t, rigConfig{Rec: engine.Config{CacheSize: 1 << 20}}); !errors.As(err, &ce) || ce.Field != "Dir" {
		t.Fatalf("no dump dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	_, err = newRig(t, rigConfig{Rec: engine.Config{CacheSize: 1 << 20}, Dump: Config{Dir: filepath.Join(file, "sub")}})
	if !errors.As(err, &ce) || ce.Field != "Dir" {
		t.Fatalf("bad dir: %v", err)
	}
}

func TestRotation(t *testing.T) {
	f := func(dc Config, wantKept int) {
		t.Helper()
		dc.Policy = PolicySeparate
		r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: dc})
		ids := discover(t, r, "a")
		var last Result
		for i := range 5 {
			feed(r, vc, ids, t0+int64(i)*1000*ms, t0+int64(i)*1000*ms+100*ms, 10*ms)
			id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("n", i)})
			if err != nil {
				t.Fatal(err)
			}
			vc.Set(t0 + int64(i)*1000*ms + 200*ms)
			last = wait(t, r, id)
			if last.Err != nil {
				t.Fatal(last.Err)
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
		if len(files) != wantKept || files[len(files)-1] != last.Path {
			t.Fatalf("%+v: kept %v, want %d ending with %s", dc, files, wantKept, last.Path)
		}
		if r.Status().Rotated != uint64(5-wantKept) {
			t.Fatalf("rotated %d", r.Status().Rotated)
		}
	}
	f(Config{MaxFiles: 2}, 2)
	st := dumpSize(t)
	f(Config{MaxTotalBytes: 3*st + st/2}, 3)
}

// dumpSize measures the size of one rotation-test dump.
func dumpSize(t *testing.T) int64 {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	id, _ := r.Trigger(TriggerParams{Reason: "n0"})
	vc.Set(t0 + 200*ms)
	res := wait(t, r, id)
	return res.Bytes
}

func TestMinFreeDisk(t *testing.T) {
	r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{MinFreeDisk: 1 << 62}})
	ids := discover(t, r, "a")
	prior := filepath.Join(dir, "20000101T000000.000000000Z_old_1.pack")
	os.WriteFile(prior, []byte("kept"), 0o644)
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	id, _ := r.Trigger(TriggerParams{Reason: "low"})
	vc.Set(t0 + 200*ms)
	res := wait(t, r, id)
	if !errors.Is(res.Err, ErrDiskLow) || res.Path != "" {
		t.Fatalf("result %+v, want ErrDiskLow", res)
	}
	if _, err := os.Stat(prior); err != nil {
		t.Fatalf("existing dump removed: %v", err)
	}
	if s := r.Status(); s.RefusedDisk != 1 || s.Failed != 1 || !strings.Contains(s.LastError, "min_free_disk") {
		t.Fatalf("status %+v", s)
	}
}

// faultWriter fails after n messages, like a disk filling up mid-dump.
type faultWriter struct {
	Writer
	n *int
}

func (f faultWriter) WriteMessage(t *ingest.TopicInfo, g, c int64, d []byte) error {
	if *f.n <= 0 {
		return fmt.Errorf("write: %w", errNoSpace)
	}
	*f.n--
	return f.Writer.WriteMessage(t, g, c, d)
}

var errNoSpace = errors.New("no space left on device (injected)")

func TestDiskFullMidDump(t *testing.T) {
	budget := 5
	var mu sync.Mutex
	r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{Policy: PolicySeparate, NewWriter: func(path string, o WriterOptions) (Writer, error) {
		mu.Lock()
		defer mu.Unlock()
		w, err := NewPackMmapWriter(path, o)
		return faultWriter{w, &budget}, err
	}}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	id, _ := r.Trigger(TriggerParams{Reason: "full"})
	vc.Set(t0 + 200*ms)
	res := wait(t, r, id)
	if !errors.Is(res.Err, errNoSpace) || res.Path != "" {
		t.Fatalf("result %+v, want the injected error", res)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("files left after a failed dump: %v", left)
	}
	// Recording went on; the next trigger succeeds once space returns.
	mu.Lock()
	budget = 1 << 30
	mu.Unlock()
	feed(r, vc, ids, t0+300*ms, t0+400*ms, 10*ms)
	id, _ = r.Trigger(TriggerParams{Reason: "ok"})
	vc.Set(t0 + 500*ms)
	if res := wait(t, r, id); res.Err != nil || res.Messages != 11 {
		t.Fatalf("after space returned: %+v", res)
	}
}

func TestHooksAndLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "x_y_1.pack.tmp"), []byte("partial"), 0o644)
	got := make(chan Result, 4)
	block := make(chan struct{})
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{Dir: dir, Policy: PolicySeparate, HookQueue: 1, Hooks: []Hook{HookFunc(func(res Result) {
		<-block // a slow hook
		got <- res
	})}}})
	if s := r.Status(); len(s.LeftoverTmp) != 1 {
		t.Fatalf("leftovers %v", s.LeftoverTmp)
	}
	ids := discover(t, r, "a")
	var results []Result
	for i := range 4 {
		feed(r, vc, ids, t0+int64(i)*1000*ms, t0+int64(i)*1000*ms+100*ms, 10*ms)
		id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("h", i)})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(t0 + int64(i)*1000*ms + 200*ms)
		results = append(results, wait(t, r, id)) // not delayed by the blocked hook
	}
	close(block)
	first := <-got
	if first.Path != results[0].Path || first.Err != nil {
		t.Fatalf("hook got %+v", first)
	}
	r.Stop()
	if d := r.Status().HookResultsDropped; d == 0 {
		t.Fatalf("hook queue of 1 with a blocked hook dropped nothing")
	}
}

func TestStopWritesPendingDump(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(time.Hour), Guard: new(time.Duration(0))}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	id, _ := r.Trigger(TriggerParams{Reason: "stop"})
	if !waitPending(r) {
		t.Fatal("dump written before its post window")
	}
	r.Stop()
	res := wait(t, r, id)
	if res.Err != nil || res.Messages != 11 {
		t.Fatalf("pending dump at Stop: %+v", res)
	}
	if r.IsDumping() {
		t.Fatal("IsDumping after Stop")
	}
}

func waitPending(r *rig) bool { return r.Status().Pending == 1 }

func TestDestroyOnOffline(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(50 * time.Millisecond), Guard: new(time.Duration(0)), DestroyOnOffline: true}})
	ids := discover(t, r, "a", "b")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	used := r.ArenaUsage().Used
	id, _ := r.Trigger(TriggerParams{Reason: "off"})
	r.Offline(ids["a"])
	if r.ArenaUsage().Used != used {
		t.Fatal("ring freed while a pending dump needs it")
	}
	vc.Set(t0 + 200*ms)
	if res := wait(t, r, id); res.Err != nil || res.Messages != 22 {
		t.Fatalf("dump %+v", res)
	}
	if got := r.ArenaUsage().Used; got != used/2 {
		t.Fatalf("arena used %d after the dump, want %d", got, used/2)
	}
	if st := r.Topics()[ids["a"]]; !st.Freed {
		t.Fatalf("status %+v", st)
	}
	// Discovered again: a new id and a fresh ring.
	id2, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil || id2 == ids["a"] {
		t.Fatalf("rediscovery: %d, %v", id2, err)
	}
}

func TestDumpReorderByProducerTime(t *testing.T) {
	f := func(window time.Duration, wantSorted bool) {
		t.Helper()
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{ReorderWindow: window}})
		ids := discover(t, r, "a", "b")
		// Producer times jitter by up to 30 ms against capture order.
		for i := range 100 {
			ns := t0 + int64(i)*10*ms
			vc.Set(ns)
			for name, id := range ids {
				gen := ns - int64((i*7919)%4)*10*ms
				r.Ingest(id, gen, []byte(name))
			}
		}
		id, _ := r.Trigger(TriggerParams{Reason: "reorder"})
		vc.Set(t0 + 2000*ms)
		res := wait(t, r, id)
		if res.Err != nil || res.Messages != 200 {
			t.Fatalf("%+v", res)
		}
		pr, err := pack.Open(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		fr := pack.NewFrame(0, 0)
		sorted, n := true, 0
		var last int64
		for pr.ReadInto(fr) == nil {
			for i := range fr.Len() {
				g := fr.Message(i).GenTs
				if g < last {
					sorted = false
				}
				last = g
				n++
			}
		}
		if n != 200 || sorted != wantSorted {
			t.Fatalf("window %v: %d messages, sorted by producer time = %v, want %v", window, n, sorted, wantSorted)
		}
	}
	f(0, false)
	f(50*time.Millisecond, true)
}

// gateWriter blocks its first message until release is closed.
type gateWriter struct {
	Writer
	entered chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (g gateWriter) WriteMessage(t *ingest.TopicInfo, gen, c int64, d []byte) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Writer.WriteMessage(t, gen, c, d)
}

func TestBusySkipData(t *testing.T) {
	f := func(skip bool) {
		t.Helper()
		entered, release := make(chan struct{}), make(chan struct{})
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Millisecond), Guard: new(time.Duration(0)), BusySkipData: skip}, Dump: Config{NewWriter: func(path string, o WriterOptions) (Writer, error) {
			w, err := NewPackMmapWriter(path, o)
			return gateWriter{w, entered, release, &sync.Once{}}, err
		}}})
		ids := discover(t, r, "a")
		feed(r, vc, ids, t0, t0+100*ms, 10*ms)
		id, _ := r.Trigger(TriggerParams{Reason: "busy"})
		vc.Set(t0 + 200*ms)
		<-entered // the dump is being written
		if !r.IsDumping() {
			t.Fatal("IsDumping false while writing")
		}
		stored := r.Ingest(ids["a"], 0, []byte("during"))
		close(release)
		res := wait(t, r, id)
		if stored == skip || res.Err != nil {
			t.Fatalf("BusySkipData=%v: ingest during the dump stored=%v, %v", skip, stored, res.Err)
		}
		if got := r.Topics()[ids["a"]].Counters.SkippedBusy; got != map[bool]uint64{true: 1, false: 0}[skip] {
			t.Fatalf("SkippedBusy = %d", got)
		}
	}
	f(false)
	f(true)
}

// slowWriter sleeps per message, like a very slow disk.
type slowWriter struct{ Writer }

func (s slowWriter) WriteMessage(t *ingest.TopicInfo, g, c int64, d []byte) error {
	time.Sleep(100 * time.Microsecond)
	return s.Writer.WriteMessage(t, g, c, d)
}

// TestStopAbandonsLargeMessagesAtDeadline: with large messages Stop's
// deadline is checked by bytes written, not only every 1024 messages: 48
// messages of 1 MiB written at 20 ms each would take about a second; with
// a 50 ms deadline the dump is abandoned after a few of them.
func TestStopAbandonsLargeMessagesAtDeadline(t *testing.T) {
	r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Hour), Post: new(time.Hour), Guard: new(time.Duration(0)), CacheSize: 128 << 20, TopicBytes: 64 << 20, MaxPacket: 2 << 20}, Dump: Config{StopTimeout: 50 * time.Millisecond, NewWriter: func(path string, o WriterOptions) (Writer, error) {
		w, err := NewPackWriteWriter(path, o)
		return verySlowWriter{w}, err
	}}})
	ids := discover(t, r, "camera")
	frame := make([]byte, 1<<20)
	for i := range int64(48) {
		vc.Set(t0 + i*ms)
		if !r.Ingest(ids["camera"], 0, frame) {
			t.Fatalf("frame %d rejected", i)
		}
	}
	id, _ := r.Trigger(TriggerParams{Reason: "abandon"})
	r.Stop()
	res := wait(t, r, id)
	if !errors.Is(res.Err, ErrStopped) || res.Path != "" {
		t.Fatalf("result %+v, want ErrStopped", res)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

type verySlowWriter struct{ Writer }

func (s verySlowWriter) WriteMessage(t *ingest.TopicInfo, g, c int64, d []byte) error {
	time.Sleep(20 * time.Millisecond)
	return s.Writer.WriteMessage(t, g, c, d)
}

func TestStopAbandonsAtDeadline(t *testing.T) {
	r, vc, dir := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Hour), Post: new(time.Hour), Guard: new(time.Duration(0))}, Dump: Config{StopTimeout: 50 * time.Millisecond, NewWriter: func(path string, o WriterOptions) (Writer, error) {
		w, err := NewPackMmapWriter(path, o)
		return slowWriter{w}, err
	}}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+5000*ms, ms) // 5001 messages: ~0.5 s to write
	id, _ := r.Trigger(TriggerParams{Reason: "abandon"})
	start := time.Now()
	r.Stop()
	res := wait(t, r, id)
	if !errors.Is(res.Err, ErrStopped) || res.Path != "" {
		t.Fatalf("result %+v, want ErrStopped", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v with a 50ms deadline", d)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
