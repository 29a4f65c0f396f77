package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/s3test"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/shm"
)

// uploadRecorder starts "edr-lite run" with a shm topic being published
// and the given [upload] keys, dumps in dumpDir.
func uploadRecorder(t *testing.T, dumpDir, uploadKeys string) (*upRec, *syncBuffer) {
	return uploadRecorderRot(t, dumpDir, "min_free_disk = 0", uploadKeys)
}

func uploadRecorderRot(t *testing.T, dumpDir, rotation, uploadKeys string) (*upRec, *syncBuffer) {
	t.Helper()
	return uploadRecorderWith(t, dumpDir, rotation, uploadKeys, 32, "")
}

// uploadRecorderWith is uploadRecorderRot publishing payload bytes every
// 5 ms, with control keys besides the socket (an http address).
func uploadRecorderWith(t *testing.T, dumpDir, rotation, uploadKeys string, payload int, control string) (*upRec, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	shmDir, sock, cfg := filepath.Join(dir, "shm"), filepath.Join(dir, "edr.sock"), filepath.Join(dir, "edr.toml")
	os.MkdirAll(shmDir, 0o700)
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
cache_size = "8MiB"
pre = "200ms"
post = "20ms"
guard = "10ms"
coalesce = "separate"
max_dumps_per_minute = 0
max_manual_dumps_per_minute = 0
[rotation]
%s
[[source.shm]]
dir = %q
[control]
socket = %q
%s
[upload]
retry_min = "50ms"
retry_max = "200ms"
%s
`, dumpDir, rotation, shmDir, sock, control, uploadKeys)), 0o600)
	if code, out, errs := runBin(t, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %s %s", out, errs)
	}
	logs := &syncBuffer{}
	rec := startUploadRecorder(t, cfg, sock, logs)
	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/a", Type: ingest.Named("u32"), Capacity: max(1<<20, 64*payload)})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, payload)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			buf[0] = byte(i)
			p.Publish(time.Now().UnixNano(), buf)
		}
	}()
	t.Cleanup(func() { close(stop); <-done; p.Close() })
	waitFor(t, func() bool {
		for _, tp := range rec.status().Topics {
			if tp.HeldMessages > 10 {
				return true
			}
		}
		return false
	}, "sensor/a recorded")
	return rec, logs
}

// written returns how many messages the recorder stored so far.
func written(r *upRec) uint64 {
	var n uint64
	for _, tp := range r.status().Topics {
		n += tp.Written
	}
	return n
}

// TestUploadFailuresAreReported: wrong credentials, a missing bucket and a
// full local disk each give a clear status and log line, and recording
// goes on.
func TestUploadFailuresAreReported(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	check := func(t *testing.T, keys, wantErr, wantKind string) {
		rec, logs := uploadRecorder(t, t.TempDir(), keys)
		p1 := rec.trigger("--reason", "one")
		// the entry between two attempts (status failed, the error kept):
		// the error is in status as soon as an attempt fails, while the
		// queue may already be trying again
		var st daemon.Status
		waitFor(t, func() bool {
			st = rec.status()
			return strings.Contains(st.Upload.LastError, wantErr) && st.Upload.Failed == 1 &&
				len(st.Upload.Entries) > 0 && st.Upload.Entries[0].State == "failed"
		}, "the error in status: "+wantErr)
		if st.Upload.Failed != 1 || st.Upload.Entries[0].State != "failed" || !strings.Contains(st.Upload.Entries[0].LastError, wantErr) {
			t.Errorf("status %+v", st.Upload)
		}
		if !strings.Contains(logs.String(), wantErr) || !strings.Contains(logs.String(), "kind="+wantKind) ||
			!strings.Contains(logs.String(), "the whole queue pauses") {
			t.Errorf("no log line says %q, kind=%s and the pause:\n%s", wantErr, wantKind, logs.String())
		}
		if st.Upload.LastErrorKind != wantKind || st.Upload.Entries[0].ErrorKind != wantKind {
			t.Errorf("kind in status: %q, want %q", st.Upload.LastErrorKind, wantKind)
		}
		code, out, _ := runBin(t, "status", "--socket", rec.sock)
		if code != 0 || !strings.Contains(out, "last upload error") || !strings.Contains(out, wantErr) || !strings.Contains(out, "kind "+wantKind) {
			t.Errorf("status text:\n%s", out)
		}
		before := written(rec)
		p2 := rec.trigger("--reason", "two")
		if _, err := os.Stat(p1); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(p2); err != nil || written(rec) <= before {
			t.Errorf("recording stopped: %v, written %d then %d", err, before, written(rec))
		}
	}
	base := fmt.Sprintf("endpoint = %q\naccess_key = %q\n", srv.Endpoint, s3test.AccessKey)
	t.Run("wrong credentials", func(t *testing.T) {
		check(t, base+`secret_key = "not-the-secret"`+"\nbucket = \"fleet\"\n", "credentials rejected by the server", "credentials")
	})
	t.Run("missing bucket", func(t *testing.T) {
		check(t, base+fmt.Sprintf("secret_key = %q\nbucket = \"no-such-bucket\"\n", s3test.SecretKey), "bucket does not exist", "bucket")
	})
	t.Run("full disk", func(t *testing.T) {
		testutil.SkipUnlessRoot(t, "to mount a small tmpfs as the dump directory")
		dumpDir := t.TempDir()
		if err := syscall.Mount("tmpfs", dumpDir, "tmpfs", 0, "size=2m"); err != nil {
			testutil.SkipIfNotSupported(t, err)
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Unmount(dumpDir, syscall.MNT_DETACH) })
		srv.Stop()
		defer func() {
			if !srv.Running() {
				srv.Restart()
			}
		}()
		rec, logs := uploadRecorder(t, dumpDir, base+fmt.Sprintf("secret_key = %q\nbucket = \"fleet\"\n", s3test.SecretKey))
		rec.trigger("--reason", "queued")
		filler := filepath.Join(dumpDir, "filler")
		f, _ := os.Create(filler)
		for b := make([]byte, 64<<10); ; {
			if _, err := f.Write(b); err != nil {
				break
			}
		}
		f.Close()
		srv.Restart() // the upload succeeds; its journal write cannot
		waitFor(t, func() bool { u := rec.status().Upload; return u.JournalError != "" && u.Uploaded == 1 }, "the upload done and the journal error in status")
		st := rec.status()
		if !strings.Contains(st.Upload.JournalError, "no space left on device") || st.Upload.Uploaded != 1 {
			t.Errorf("status with a full disk: %+v", st.Upload)
		}
		if !strings.Contains(logs.String(), "upload journal not written") || !strings.Contains(logs.String(), "no space left on device") {
			t.Errorf("no log line for the full disk:\n%s", logs.String())
		}
		code, out, _ := runBin(t, "status", "--socket", rec.sock)
		if code != 0 || !strings.Contains(out, "upload journal error") {
			t.Errorf("status text:\n%s", out)
		}
		before := written(rec)
		waitFor(t, func() bool { return written(rec) > before+10 }, "recording to go on with the disk full")
		os.Remove(filler)
		rec.trigger("--reason", "room-again")
		waitFor(t, func() bool { st = rec.status(); return st.Upload.Queued == 0 && st.Upload.JournalError == "" }, "the journal writable again")
	})
	t.Run("disk full of another file", func(t *testing.T) {
		// issue 32.3: rotation deletes nothing it cannot make room with
		dumpDir := mountTmpfs(t, "4m")
		srv.Stop() // the dumps stay queued
		defer func() {
			if !srv.Running() {
				srv.Restart()
			}
		}()
		rec, logs := uploadRecorderRot(t, dumpDir, "max_files = 2\nmin_free_disk = \"1MiB\"",
			base+fmt.Sprintf("secret_key = %q\nbucket = \"fleet\"\n", s3test.SecretKey))
		var paths []string
		for i := range 4 {
			paths = append(paths, rec.trigger("--reason", fmt.Sprintf("q%d", i)))
		}
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("a queued dump was rotated out with room on the disk: %v", err)
			}
		}
		fillDisk(t, filepath.Join(dumpDir, "filler"))
		code, _, errs := runBin(t, "trigger", "--socket", rec.sock, "--reason", "no-room")
		if code != 1 || !strings.Contains(errs, "not enough free disk") || !strings.Contains(errs, "other files") ||
			!strings.Contains(errs, "no dump deleted") {
			t.Errorf("trigger with the disk full of another file: %d %s", code, errs)
		}
		for i, p := range paths {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("dump %d deleted in vain: %v", i, err)
			}
		}
		st := rec.status()
		if st.Upload.Evicted != 0 || st.Upload.Queued != 4 || st.Dumps.RefusedDisk != 1 || st.Dumps.Rotated != 0 ||
			!strings.Contains(st.Dumps.LastError, "other files") {
			t.Errorf("status after the refusal: upload %+v, dumps %+v", st.Upload, st.Dumps)
		}
		if strings.Contains(logs.String(), "queued dump deleted before it was uploaded") {
			t.Errorf("a queued dump was deleted:\n%s", logs.String())
		}
		before := written(rec)
		waitFor(t, func() bool { return written(rec) > before+10 }, "recording to go on")
	})
	t.Run("disk critically low", func(t *testing.T) {
		// issue 32.4: with the queued dumps beyond max_files, each new dump
		// that needs room takes that of the oldest queued dumps, one at a
		// time and no more than it needs (dump.TestRotationMakesRoomOneDumpAtATime
		// counts it exactly), each counted with its reason in status,
		// metrics and log
		dumpDir := mountTmpfs(t, "10m")
		srv.Stop() // the dumps stay queued
		defer func() {
			if !srv.Running() {
				srv.Restart()
			}
		}()
		rec, logs := uploadRecorderWith(t, dumpDir, "max_files = 2\nmin_free_disk = \"3MiB\"",
			base+fmt.Sprintf("secret_key = %q\nbucket = \"fleet\"\n", s3test.SecretKey), 16<<10, `http = "127.0.0.1:0"`)
		var paths []string
		evicted := uint64(0)
		for i := range 16 {
			paths = append(paths, rec.trigger("--reason", fmt.Sprintf("q%d", i)))
			// about 0.66 MiB a dump, 3 MiB kept free: 9 or 10 fit in
			// 10 MiB; each new one takes the room of one or two old ones
			// (their sizes differ a little), never down to max_files
			st := rec.status()
			if st.Upload.Evicted > evicted+2 || st.Upload.Queued < min(i+1, 8) {
				t.Fatalf("dump %d: %d queued dumps evicted at once, %d left queued; want one or two, at least %d left:\n%+v",
					i, st.Upload.Evicted-evicted, st.Upload.Queued, min(i+1, 8), st.Upload)
			}
			evicted = st.Upload.Evicted
		}
		if evicted == 0 {
			t.Fatal("no queued dump evicted: the disk never got low, make the dumps bigger")
		}
		for i, p := range paths {
			_, err := os.Stat(p)
			if gone := err != nil; gone != (i < int(evicted)) {
				t.Errorf("dump %d: gone=%v, want the %d oldest evicted", i, gone, evicted)
			}
		}
		st := rec.status()
		if st.Upload.EvictedFor["min_free_disk"] != evicted || st.Dumps.RotatedFor["min_free_disk"] != evicted ||
			st.Dumps.RotatedFor["max_files"] != 0 || st.Dumps.RefusedDisk != 0 || !strings.Contains(st.Upload.LastEvicted, "min_free_disk") {
			t.Errorf("status after the evictions: upload %+v, dumps %+v", st.Upload, st.Dumps)
		}
		if n := strings.Count(logs.String(), "queued dump deleted before it was uploaded"); n != int(evicted) ||
			!strings.Contains(logs.String(), "reason=min_free_disk") {
			t.Errorf("%d log lines for %d evicted dumps:\n%s", n, evicted, logs.String())
		}
		if code, out, _ := runBin(t, "status", "--socket", rec.sock); code != 0 || !strings.Contains(out, fmt.Sprintf("%d evicted", evicted)) ||
			!strings.Contains(out, fmt.Sprintf("min_free_disk %d", evicted)) || !strings.Contains(out, "last evicted: ") {
			t.Errorf("status text after the evictions: %d\n%s", code, out)
		}
		metrics := metricsOf(t, logs)
		for _, want := range []string{fmt.Sprintf(`edr_dump_rotated_total{reason="min_free_disk"} %d`, evicted),
			`edr_dump_rotated_total{reason="max_files"} 0`, fmt.Sprintf(`edr_upload_evicted_total{reason="min_free_disk"} %d`, evicted)} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "_total{reason"))
			}
		}
	})
}

// mountTmpfs mounts a tmpfs of size for the test (as root), or skips.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	testutil.SkipUnlessRoot(t, "to mount a small tmpfs as the dump directory")
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		testutil.SkipIfNotSupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes path until its file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for b := make([]byte, 64<<10); ; {
		if _, err := f.Write(b); err != nil {
			break
		}
	}
	f.Close()
}

// metricsOf reads /metrics of the recorder whose log names its http
// address.
func metricsOf(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	addr := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if i := strings.Index(l, "addr=http://"); i >= 0 {
			addr = strings.Fields(l[i+len("addr="):])[0]
		}
	}
	if addr == "" {
		t.Fatalf("no http address in the logs:\n%s", logs.String())
	}
	return httpGet(t, addr+"/metrics")
}

// TestUploadDamagedQueueFiles (issue 32.9): a recorder starting on a dump
// directory whose upload journal and ledger are damaged sets both aside
// (numbered), says so in its log (garbage as garbage), and counts them in
// status, the status text and /metrics.
func TestUploadDamagedQueueFiles(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dumpDir := t.TempDir()
	os.WriteFile(filepath.Join(dumpDir, ".edr-upload.journal"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(dumpDir, ".edr-upload.journal.bad.1"), []byte("an earlier damage"), 0o600)
	os.WriteFile(filepath.Join(dumpDir, ".edr-upload.sent"), []byte("\x00garbage\n{\"file\":\"x.pack\",\"size\":1}\n"), 0o600)
	rec, logs := uploadRecorderWith(t, dumpDir, "min_free_disk = 0",
		fmt.Sprintf("endpoint = %q\naccess_key = %q\nsecret_key = %q\nbucket = \"fleet\"\n", srv.Endpoint, s3test.AccessKey, s3test.SecretKey),
		32, `http = "127.0.0.1:0"`)
	l := logs.String()
	if !strings.Contains(l, "upload journal damaged; set aside") || !strings.Contains(l, "upload ledger holds garbage") || strings.Contains(l, "power cut") {
		t.Errorf("logs:\n%s", l)
	}
	if b, _ := os.ReadFile(filepath.Join(dumpDir, ".edr-upload.journal.bad.1")); string(b) != "an earlier damage" {
		t.Errorf("an earlier set-aside journal was overwritten: %q", b)
	}
	st := rec.status()
	want := []string{".edr-upload.journal.bad.1", ".edr-upload.journal.bad.2", ".edr-upload.sent.bad.1"}
	if st.Upload.SetAsideFiles != 3 || strings.Join(st.Upload.SetAside, " ") != strings.Join(want, " ") {
		t.Errorf("status: %d %v, want %v", st.Upload.SetAsideFiles, st.Upload.SetAside, want)
	}
	if _, out, _ := runBin(t, "status", "--socket", rec.sock); !strings.Contains(out, "set aside: 3") {
		t.Errorf("status text:\n%s", out)
	}
	if m := metricsOf(t, logs); !strings.Contains(m, "edr_upload_set_aside_files 3") {
		t.Errorf("/metrics:\n%s", grepLines(m, "edr_upload"))
	}
}
