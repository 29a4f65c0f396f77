package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/s3test"
	"github.com/edr-lite/edr-lite/shm"
	"github.com/edr-lite/edr-lite/upload"
)

// recorder is an "edr-lite run" process of a test.
type upRec struct {
	t    *testing.T
	cfg  string
	sock string
	cmd  *exec.Cmd
	logs *syncBuffer
}

func startUploadRecorder(t *testing.T, cfg, sock string, logs *syncBuffer) *upRec {
	t.Helper()
	os.Remove(sock)
	cmd := exec.Command(edrBinary(t), "run", "--config", cfg)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &upRec{t: t, cfg: cfg, sock: sock, cmd: cmd, logs: logs}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "control socket")
	return r
}

func (r *upRec) status() daemon.Status {
	r.t.Helper()
	code, out, errs := runBin(r.t, "status", "--socket", r.sock, "--json")
	if code != 0 {
		r.t.Fatalf("status: %d %s\nlogs:\n%s", code, errs, r.logs.String())
	}
	var st daemon.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

func (r *upRec) trigger(args ...string) string {
	r.t.Helper()
	code, out, errs := runBin(r.t, append([]string{"trigger", "--socket", r.sock}, args...)...)
	if code != 0 {
		r.t.Fatalf("trigger %v: %d %s %s\nlogs:\n%s", args, code, out, errs, r.logs.String())
	}
	return strings.TrimSpace(out)
}

func (r *upRec) kill() {
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
}

// waitLong is waitFor with a longer deadline, for uploads paced by a cap.
func waitLong(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpWatcher keeps a copy of every dump that appears in a directory, so
// the test knows every dump ever written even after rotation deleted some.
// A dump deleted before its upload could never reach the bucket afterwards
// (the uploader reads the local file): the final check that the bucket
// holds every copy byte for byte also proves nothing went locally before
// the server had it.
type dumpWatcher struct {
	mu     sync.Mutex
	copies map[string][]byte
	stop   chan struct{}
	done   chan struct{}
}

func watchDumps(dir string) *dumpWatcher {
	w := &dumpWatcher{copies: map[string][]byte{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				n := e.Name()
				if !strings.HasSuffix(n, ".pack") {
					continue
				}
				w.mu.Lock()
				_, seen := w.copies[n]
				w.mu.Unlock()
				if !seen {
					if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
						w.mu.Lock()
						w.copies[n] = b
						w.mu.Unlock()
					}
				}
			}
		}
	}()
	return w
}

func (w *dumpWatcher) finish() map[string][]byte {
	close(w.stop)
	<-w.done
	return w.copies
}

// getObject downloads an object, an error when there is none.
func getObject(srv *s3test.Server, bucket, key string) ([]byte, error) {
	var out []byte
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		for _, o := range srv.List(bucket, key) {
			if o.Key == key {
				out = srv.Get(bucket, key)
				return
			}
		}
		err = fmt.Errorf("no object %s", key)
	}()
	return out, err
}

// TestUploadAcceptance is the fleet upload's acceptance test: dumps recorded
// while the S3 server is down, the server back, killed again in the middle
// of a multipart upload, back again, the recorder SIGKILLed in the middle of
// an upload and restarted: in the end every dump is in the bucket exactly
// once and byte for byte (downloaded and verified), the journal is empty,
// no multipart upload is left open, rotation never deleted a queued dump and
// nothing went locally before the server confirmed it.
func TestUploadAcceptance(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	srv.Stop() // the recorder starts with the server down
	dir := t.TempDir()
	shmDir, dumpDir := filepath.Join(dir, "shm"), filepath.Join(dir, "dumps")
	sock, cfg := filepath.Join(dir, "edr.sock"), filepath.Join(dir, "edr.toml")
	os.MkdirAll(shmDir, 0o700)
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
cache_size = "96MiB"
pre = "300ms"
post = "20ms"
guard = "10ms"
coalesce = "separate"
max_dumps_per_minute = 0
max_manual_dumps_per_minute = 0
[rotation]
max_files = 10             # rotation must keep every queued dump beyond it
min_free_disk = 0
[[topic]]
match = "camera/*"
max_bytes = "32MiB"
pre = "5s"
[[source.shm]]
dir = %q
[control]
socket = %q
http = "127.0.0.1:0"
[upload]
endpoint = %q
bucket = "fleet"
access_key = %q
secret_key = %q
prefix = "fleet"
vehicle = "car-7"
part_size = "5MiB"
bandwidth = "6MiB"         # a 15 MiB dump takes ~2.5 s: time to cut it
retry_min = "50ms"
retry_max = "400ms"
stall_timeout = "5s"
`, dumpDir, shmDir, sock, srv.Endpoint, s3test.AccessKey, s3test.SecretKey)), 0o600)
	if code, out, errs := runBin(t, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %s %s", out, errs)
	}
	tmpl, _ := upload.ParseTemplate(upload.DefaultKey)
	keyOf := func(name string) string {
		ts, _ := time.Parse("20060102T150405.000000000Z", name[:strings.IndexByte(name, '_')])
		return tmpl.Expand(upload.KeyFields{Prefix: "fleet", Vehicle: "car-7", Time: ts, File: name})
	}
	watch := watchDumps(dumpDir)
	logs := &syncBuffer{}
	rec := startUploadRecorder(t, cfg, sock, logs)

	small, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/small", Type: ingest.Named("u32")})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // 200 Hz of 64 bytes: a few KiB per dump
		defer wg.Done()
		buf := make([]byte, 64)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			buf[0], buf[1] = byte(i), byte(i>>8)
			small.Publish(time.Now().UnixNano(), buf)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, func() bool {
		for _, tp := range rec.status().Topics {
			if tp.Name == "sensor/small" && tp.HeldMessages > 20 {
				return true
			}
		}
		return false
	}, "sensor/small recorded")

	// 50 dumps while the server is down; rotation (max_files 10) keeps them all
	for i := 0; i < 50; i++ {
		rec.trigger("--reason", fmt.Sprintf("offline-%02d", i), "--topics", "sensor/*")
	}
	st := rec.status()
	if st.Upload == nil || st.Upload.Queued != 50 || st.Dumps.Written != 50 {
		t.Fatalf("after 50 dumps with the server down: upload %+v, dumps %+v", st.Upload, st.Dumps)
	}
	waitFor(t, func() bool { st = rec.status(); return st.Upload.Failed > 0 }, "a failed attempt in status")
	if !strings.Contains(st.Upload.LastError, "server unreachable") || st.Upload.Uploaded != 0 {
		t.Errorf("status with the server down: %+v", st.Upload)
	}
	if n, _ := filepath.Glob(filepath.Join(dumpDir, "*.pack")); len(n) != 50 {
		t.Fatalf("%d dumps on disk, want all 50 kept (queued) despite max_files 10", len(n))
	}
	if !strings.Contains(logs.String(), "upload failed; will retry") {
		t.Errorf("no log line for the failed upload:\n%s", logs.String())
	}
	code, out, _ := runBin(t, "ls", dumpDir)
	if code != 0 || !strings.Contains(out, "UPLOAD") || !strings.Contains(out, "failed") {
		t.Errorf("ls with the server down: %d\n%s", code, out)
	}
	metrics := metricsOf(t, logs)
	if !strings.Contains(metrics, `edr_upload_queued{state="failed"}`) || !strings.Contains(metrics, `edr_upload_dumps_total{outcome="uploaded"} 0`) {
		t.Errorf("/metrics lacks the upload queue:\n%s", metrics)
	}

	// a big dump (3 parts), then the server back: the small ones go first
	big, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "camera/big", Type: ingest.Named("raw"), Capacity: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	frame := make([]byte, 64<<10)
	for i := 0; i < 240; i++ {
		frame[0], frame[1] = byte(i), byte(i>>8)
		for j := 2; j < len(frame); j += 61 {
			frame[j] = byte(i * j)
		}
		big.Publish(time.Now().UnixNano(), frame)
		time.Sleep(2 * time.Millisecond)
	}
	bigPath := rec.trigger("--reason", "big", "--topics", "camera/*", "--pre", "5s")
	if st, err := os.Stat(bigPath); err != nil || st.Size() < 11<<20 {
		t.Fatalf("big dump %s: %v %v, want more than 2 parts of 5MiB", bigPath, st.Size(), err)
	}
	srv.Restart()
	bigName := filepath.Base(bigPath)
	partsOnServer := func() int {
		n := 0
		for _, u := range srv.Uploads("fleet") {
			if strings.HasSuffix(*u.Key, bigName) {
				n = max(n, srv.Parts("fleet", *u.Key, *u.UploadId))
			}
		}
		return n
	}
	waitLong(t, 60*time.Second, func() bool { return partsOnServer() >= 1 }, "the first part of the big dump on the server")
	srv.Stop() // mid-multipart
	waitFor(t, func() bool {
		st = rec.status()
		return st.Upload.Failed > 0 && strings.Contains(st.Upload.LastError, "unreachable")
	}, "the cut upload in status")
	// recording goes on while the server is down again
	rec.trigger("--reason", "offline-again", "--topics", "sensor/*")

	srv.Restart()
	waitLong(t, 60*time.Second, func() bool {
		st = rec.status()
		return st.Upload.Uploading == bigName && st.Upload.UploadingSent > 1<<20
	}, "the big dump uploading again")
	rec.kill() // SIGKILL mid-upload
	rec = startUploadRecorder(t, cfg, sock, logs)
	waitLong(t, 90*time.Second, func() bool { st = rec.status(); return st.Upload.Queued == 0 }, "the queue to drain after the restart")
	if !regexp.MustCompile(`msg="dump uploaded" .*_big_\d+\.pack .*parts=4 parts_resumed=[1-3]`).MatchString(logs.String()) {
		t.Errorf("the big dump was not resumed from the parts the server kept:\n%s", logs.String())
	}
	copies := watch.finish()
	close(stop)
	wg.Wait()
	stop = make(chan struct{})

	// every dump exactly once, byte for byte, and it verifies
	objs := srv.List("fleet", "")
	if len(objs) != len(copies) || len(copies) != 52 {
		t.Errorf("bucket holds %d objects, %d dumps were written (want 52)", len(objs), len(copies))
	}
	keys := map[string]bool{}
	for _, o := range objs {
		if keys[o.Key] {
			t.Errorf("key %s twice", o.Key)
		}
		keys[o.Key] = true
		if !strings.HasPrefix(o.Key, "fleet/vehicle=car-7/date=") {
			t.Errorf("key %s outside the layout", o.Key)
		}
	}
	dl := t.TempDir()
	for name, b := range copies {
		got, err := getObject(srv, "fleet", keyOf(name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: object differs from the dump (%v)", name, err)
			continue
		}
		if name == bigName || strings.Contains(name, "offline-07") {
			p := filepath.Join(dl, name)
			os.WriteFile(p, got, 0o644)
			if code, out, _ := runBin(t, "verify", p); code != 0 {
				t.Errorf("verify %s downloaded: %d %s", name, code, out)
			}
		}
	}
	if u := srv.Uploads("fleet"); len(u) != 0 {
		t.Errorf("%d multipart uploads left open", len(u))
	}
	j, err := os.ReadFile(filepath.Join(dumpDir, upload.JournalName))
	var doc struct{ Queue []json.RawMessage }
	if err != nil || json.Unmarshal(j, &doc) != nil || len(doc.Queue) != 0 {
		t.Errorf("journal not empty: %v\n%s", err, j)
	}
	// rotation applies again once the dumps are uploaded
	rec.trigger("--reason", "after", "--topics", "sensor/*")
	waitFor(t, func() bool { n, _ := filepath.Glob(filepath.Join(dumpDir, "*.pack")); return len(n) <= 10 }, "rotation down to max_files")
	code, out, _ = runBin(t, "ls", dumpDir)
	if code != 0 || strings.Count(out, "uploaded") < 9 {
		t.Errorf("ls after the uploads: %d\n%s", code, out)
	}
}
