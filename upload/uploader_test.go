//go:build !ecu

package upload

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dumpName is a dump file name as package dump makes them.
func dumpName(i int) string {
	return time.Date(2026, 12, 2, 13, 0, i, 0, time.UTC).Format("20060102T150405.000000000Z") + "_test_" + string(rune('a'+i)) + ".pack"
}

func newTestUploader(t *testing.T, o Options) *Uploader {
	t.Helper()
	u, err := New(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Stop)
	return u
}

// TestQueueSurvivesRestartAndDeletesOnlyConfirmed: dumps queued while the
// server is down stay in the journal across a restart of the uploader;
// with delete_after_upload they are deleted only once in the bucket, and
// the journal ends empty while the ledger lists them.
func TestQueueSurvivesRestartAndDeletesOnlyConfirmed(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	srv.Stop()
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir, o.DeleteAfterUpload = dir, true
	var want [][]byte
	u, _ := New(o, nil)
	if err := u.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := randomFile(t, dir, dumpName(i), 1000+i)
		b, _ := os.ReadFile(p)
		want = append(want, b)
		if err := u.Enqueue(p); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "a failed attempt", func() bool { return u.Status().Failed > 0 })
	st := u.Status()
	if st.Queued != 3 || !strings.Contains(st.LastError, "server unreachable") || !u.Keep(filepath.Join(dir, dumpName(0))) {
		t.Fatalf("status with the server down: %+v", st)
	}
	u.Stop()
	q, err := readJournal(dir)
	if err != nil || len(q) != 3 || q[0].Attempts == 0 || q[0].LastError == "" {
		t.Fatalf("journal after stop: %v %+v", err, q)
	}
	for i := range 3 {
		if _, err := os.Stat(filepath.Join(dir, dumpName(i))); err != nil {
			t.Fatalf("dump deleted before it was uploaded: %v", err)
		}
	}
	srv.Restart()
	u = newTestUploader(t, o)
	waitUntil(t, "the queue to drain", func() bool { return u.Status().Queued == 0 })
	for i := range 3 {
		key := u.KeyOf(filepath.Join(dir, dumpName(i)))
		if !strings.HasPrefix(key, "fleet/vehicle=v1/date=2026-12-02/") {
			t.Errorf("key %s", key)
		}
		if !bytes.Equal(srv.Get("fleet", key), want[i]) {
			t.Errorf("%s differs in the bucket", key)
		}
		if _, err := os.Stat(filepath.Join(dir, dumpName(i))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("delete_after_upload: %s still there (%v)", dumpName(i), err)
		}
	}
	if q, err := readJournal(dir); err != nil || len(q) != 0 {
		t.Errorf("journal not empty: %v %+v", err, q)
	}
	b, _ := os.ReadFile(filepath.Join(dir, JournalName))
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil || len(doc["queue"].([]any)) != 0 {
		t.Errorf("journal file: %s", b)
	}
	sent, _, _ := readLedger(dir)
	if len(sent) != 3 {
		t.Errorf("ledger: %+v", sent)
	}
	if st := u.Status(); st.Uploaded != 3 || st.UploadedBytes != 3003 {
		t.Errorf("status after the uploads: %+v", st)
	}
}

// TestLedgerKeepsUploadedDumpsOutOfTheQueue: a restart does not queue again
// a dump the server confirmed, and a dump copied into the directory
// without Enqueue is found by the start scan.
func TestLedgerKeepsUploadedDumpsOutOfTheQueue(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir = dir
	u := newTestUploader(t, o)
	u.Enqueue(randomFile(t, dir, dumpName(0), 100))
	waitUntil(t, "the upload", func() bool { return u.Status().Uploaded == 1 })
	u.Stop()
	randomFile(t, dir, dumpName(1), 200) // not enqueued: found by the scan
	u = newTestUploader(t, o)
	if st := u.Status(); st.Queued > 1 {
		t.Fatalf("restart queued %d dumps, want only the new one", st.Queued)
	}
	waitUntil(t, "the scanned dump uploaded", func() bool { return u.Status().Uploaded == 1 })
	states, ok, err := ReadState(dir)
	if !ok || err != nil || states[dumpName(0)].State != "uploaded" || states[dumpName(1)].State != "uploaded" {
		t.Errorf("ReadState: %v %v %+v", ok, err, states)
	}
}

// TestWindowAndBandwidth: nothing goes while the schedule window is
// closed; once open, the cap paces the bytes.
func TestWindowAndBandwidth(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local).UnixNano())
	o := testOptions(srv, "fleet")
	o.Dir, o.Window, o.Bandwidth = dir, "22:00-06:00", 512<<10
	o.Now = func() time.Time { return time.Unix(0, now.Load()) }
	u := newTestUploader(t, o)
	u.Enqueue(randomFile(t, dir, dumpName(0), 1<<20))
	time.Sleep(300 * time.Millisecond)
	if st := u.Status(); st.State != "waiting for window" || st.WindowOpen || st.Uploaded != 0 {
		t.Fatalf("window closed: %+v", st)
	}
	if objs := srv.List("fleet", ""); len(objs) != 0 {
		t.Fatalf("uploaded outside the window: %v", objs)
	}
	now.Store(time.Date(2026, 12, 2, 23, 0, 0, 0, time.Local).UnixNano())
	start := time.Now()
	u.poke()
	waitUntil(t, "the upload in the window", func() bool { return u.Status().Uploaded == 1 })
	// 1 MiB at 512 KiB/s with a 51 KiB burst: at least ~1.9 s
	if d := time.Since(start); d < 1800*time.Millisecond {
		t.Errorf("1 MiB went in %v under a 512 KiB/s cap", d)
	}
}

func TestTemplateAndWindowParsing(t *testing.T) {
	tm, err := ParseTemplate(DefaultKey)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC)
	if k := tm.Expand(KeyFields{Prefix: "", Vehicle: "car 1", Time: ts, File: "a.pack"}); k != "vehicle=car 1/date=2026-12-02/a.pack" {
		t.Errorf("empty prefix: %q", k)
	}
	tm, _ = ParseTemplate("{prefix}/{year}/{month}/{day}/{hour}/{name}.x")
	if k := tm.Expand(KeyFields{Prefix: "p/", Time: ts, File: "a.pack"}); k != "p/2026/12/02/23/a.x" {
		t.Errorf("parts: %q", k)
	}
	for _, bad := range []string{"{prefix}/{nope}/{file}", "{prefix}/x", "{file"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
	w, err := ParseWindow("22:00-06:00, 12:00-13:00")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 1, 1, h, m, 0, 0, time.Local) }
	for _, c := range []struct {
		h, m int
		open bool
	}{{23, 0, true}, {5, 59, true}, {6, 0, false}, {12, 30, true}, {13, 0, false}, {21, 59, false}} {
		if w.Open(at(c.h, c.m)) != c.open {
			t.Errorf("%02d:%02d open=%v", c.h, c.m, !c.open)
		}
	}
	if n := w.NextOpen(at(14, 0)); !n.Equal(at(22, 0)) {
		t.Errorf("next open after 14:00: %v", n)
	}
	// 24:00 as a start is midnight: "24:00-06:00" is "00:00-06:00", and
	// "24:00-00:00" an empty span (it was accepted and never open: the
	// fuzzer's crasher fuzz/testdata/fuzz/FuzzUploadTemplate/324e72a08acfa3fb).
	w, err = ParseWindow("24:00-06:00")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Open(at(0, 30)) || w.Open(at(6, 0)) || !w.NextOpen(at(7, 0)).Equal(at(0, 0).AddDate(0, 0, 1)) {
		t.Errorf("24:00-06:00: open at 00:30 %v, at 06:00 %v, next after 07:00 %v", w.Open(at(0, 30)), w.Open(at(6, 0)), w.NextOpen(at(7, 0)))
	}
	for _, bad := range []string{"22-06", "25:00-01:00", "10:00-10:00", "10:61-11:00", "24:00-00:00", "24:00-24:00", "24:0-0:0"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("window %q accepted", bad)
		}
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, time.Second
	for n, want := range []time.Duration{0, 100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			d := backoff(n, lo, hi)
			if d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	ok := Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s"}
	if _, err := ok.Resolve(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(o *Options){
		"endpoint":    func(o *Options) { o.Endpoint = "s3.amazonaws.com" },
		"bucket":      func(o *Options) { o.Bucket = "" },
		"secret_key":  func(o *Options) { o.SecretKey = "" },
		"part_size":   func(o *Options) { o.PartSize = 1 << 20 },
		"bandwidth":   func(o *Options) { o.Bandwidth = 10 },
		"window":      func(o *Options) { o.Window = "soon" },
		"key":         func(o *Options) { o.Key = "{prefix}" },
		"parquet_key": func(o *Options) { o.Parquet, o.ParquetKey = true, "{prefix}/{name}" },
	} {
		o := ok
		mod(&o)
		_, err := o.Resolve()
		var oe *OptionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestJournalIsBounded: a journal larger than MaxJournalSize is refused
// without being read, set aside at Start, and the queue rebuilt from the
// directory.
func TestJournalIsBounded(t *testing.T) {
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, JournalName))
	f.Truncate(MaxJournalSize + 1)
	f.Close()
	if _, err := readJournal(dir); !errors.Is(err, ErrJournal) {
		t.Fatalf("oversized journal: %v", err)
	}
	os.WriteFile(filepath.Join(dir, JournalName), []byte(`{"version":1,"queue":[{"file":"../x"}]}`), 0o644)
	if _, err := readJournal(dir); !errors.Is(err, ErrJournal) {
		t.Fatalf("journal naming a file outside the directory: %v", err)
	}
	o := Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s", Dir: dir}
	randomFile(t, dir, dumpName(0), 10)
	u := newTestUploader(t, o)
	if st := u.Status(); st.Queued != 1 {
		t.Errorf("queue rebuilt from the directory: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, JournalName+".bad.1")); err != nil {
		t.Errorf("bad journal not set aside: %v", err)
	}
}

// TestRescanForgetsGoneDumps: the ledger of confirmed dumps does not grow
// with dumps that rotation or delete_after_upload removed.
func TestRescanForgetsGoneDumps(t *testing.T) {
	dir := t.TempDir()
	var recs []sentRec
	for i := range ledgerCompactAfter + 10 {
		recs = append(recs, sentRec{File: dumpName(i%20) + string(rune('A'+i/20)), Size: 1})
	}
	if err := writeLedger(dir, recs, 0o640); err != nil {
		t.Fatal(err)
	}
	randomFile(t, dir, dumpName(0), 10)
	if err := appendLedger(dir, sentRec{File: dumpName(0), Size: 10}, 0o640); err != nil {
		t.Fatal(err)
	}
	u, err := New(Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s", Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// as after a long run: the ledger in memory names dumps that went
	for _, r := range recs {
		u.sent[r.File] = r
	}
	u.sent[dumpName(0)] = sentRec{File: dumpName(0), Size: 10}
	u.rescan()
	sent, _, err := readLedger(dir)
	if err != nil || len(sent) != 1 || len(u.sent) != 1 || u.Status().Queued != 0 {
		t.Errorf("after the rescan: ledger %d lines (%v), memory %d, queued %d; want the one dump there", len(sent), err, len(u.sent), u.Status().Queued)
	}
	u.Stop()
}
