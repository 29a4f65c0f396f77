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
[upload]
retry_min = "50ms"
retry_max = "200ms"
%s
`, dumpDir, rotation, shmDir, sock, uploadKeys)), 0o644)
	if code, out, errs := runBin(t, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %s %s", out, errs)
	}
	logs := &syncBuffer{}
	rec := startUploadRecorder(t, cfg, sock, logs)
	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/a", Type: ingest.Named("u32")})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32)
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
	check := func(t *testing.T, keys, wantErr string) {
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
		if !strings.Contains(logs.String(), wantErr) {
			t.Errorf("no log line says %q:\n%s", wantErr, logs.String())
		}
		code, out, _ := runBin(t, "status", "--socket", rec.sock)
		if code != 0 || !strings.Contains(out, "last upload error") || !strings.Contains(out, wantErr) {
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
		check(t, base+`secret_key = "not-the-secret"`+"\nbucket = \"fleet\"\n", "credentials rejected by the server")
	})
	t.Run("missing bucket", func(t *testing.T) {
		check(t, base+fmt.Sprintf("secret_key = %q\nbucket = \"no-such-bucket\"\n", s3test.SecretKey), "bucket does not exist")
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
	t.Run("disk critically low", func(t *testing.T) {
		testutil.SkipUnlessRoot(t, "to mount a small tmpfs as the dump directory")
		dumpDir := t.TempDir()
		if err := syscall.Mount("tmpfs", dumpDir, "tmpfs", 0, "size=4m"); err != nil {
			testutil.SkipIfNotSupported(t, err)
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Unmount(dumpDir, syscall.MNT_DETACH) })
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
		f, _ := os.Create(filepath.Join(dumpDir, "filler"))
		for b := make([]byte, 64<<10); ; {
			if _, err := f.Write(b); err != nil {
				break
			}
		}
		f.Close()
		code, _, errs := runBin(t, "trigger", "--socket", rec.sock, "--reason", "no-room")
		if code != 1 || !strings.Contains(errs, "not enough free disk") {
			t.Errorf("trigger with the disk full: %d %s", code, errs)
		}
		for i, p := range paths {
			_, err := os.Stat(p)
			if gone := err != nil; gone != (i < 2) {
				t.Errorf("dump %d: gone=%v, want the 2 oldest evicted down to max_files 2", i, gone)
			}
		}
		st := rec.status()
		if st.Upload.Evicted != 2 || st.Upload.Queued != 2 || !strings.Contains(st.Upload.LastEvicted, "disk critically low") ||
			st.Dumps.RefusedDisk != 1 {
			t.Errorf("status after the eviction: upload %+v, dumps %+v", st.Upload, st.Dumps)
		}
		if strings.Count(logs.String(), "queued dump deleted before it was uploaded") != 2 {
			t.Errorf("no log line per evicted dump:\n%s", logs.String())
		}
		if code, out, _ := runBin(t, "status", "--socket", rec.sock); code != 0 || !strings.Contains(out, "2 evicted") || !strings.Contains(out, "last evicted: ") {
			t.Errorf("status text after the eviction: %d\n%s", code, out)
		}
		before := written(rec)
		waitFor(t, func() bool { return written(rec) > before+10 }, "recording to go on")
	})
}
