package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

// TestSecretsAtRestArePrivate (issue 32.8): a configuration file holding a
// secret that every local user can read is refused by "config check"
// (naming file, line and key) and warned about by "run", which records and
// uploads on; everything the recorder writes beside its dumps — the upload
// journal and ledger, the Parquet tables waiting for their upload and
// their directories — follows dump_mode, whatever the umask.
func TestSecretsAtRestArePrivate(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	layout := filepath.Join(t.TempDir(), "sensor.A.layout")
	os.WriteFile(layout, []byte("u8 counter\npad 15\n"), 0o644)
	cfg := fmt.Sprintf(`
[recorder]
dump_dir = "$DIR/dumps"
dump_mode = "0600"
cache_size = "8MiB"
pre = "2s"
post = "20ms"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = "$DIR/shm"
[control]
socket = "$DIR/edr.sock"
http_token = "t0ken"
[upload]
endpoint = %q
bucket = "fleet"
access_key = %q
secret_key = %q
parquet = true
parquet_schema = { "sensor/a" = %q }
bandwidth = "8KiB"
`, srv.Endpoint, s3test.AccessKey, s3test.SecretKey, layout)

	// config check refuses the file while others can read it
	dir := t.TempDir()
	path := filepath.Join(dir, "edr.toml")
	os.WriteFile(path, []byte(strings.ReplaceAll(cfg, "$DIR", dir)), 0o644)
	os.Chmod(path, 0o644)
	code, _, errs := runBin(t, "config", "check", path)
	for _, want := range []string{path + ":19: upload.secret_key: a secret in a file every local user can read (mode 0644): chmod 600 " + path,
		path + ":14: control.http_token: a secret in a file every local user can read"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("config check of a 0644 file with secrets: %d, want 1 and %q:\n%s", code, want, errs)
		}
	}
	os.Chmod(path, 0o640)
	if code, out, errs := runBin(t, "config", "check", path); code != 0 {
		t.Errorf("config check of the same file at 0640: %d %s %s", code, out, errs)
	}

	// run warns and goes on; what it writes beside the dumps is 0600/0700
	d := startDaemonMode(t, cfg, 0o644, nil, nil)
	if l := d.logs.String(); !strings.Contains(l, "configuration file readable by every local user") ||
		!strings.Contains(l, "upload.secret_key, control.http_token") {
		t.Errorf("run does not warn about the readable secrets:\n%s", l)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	publishUntil(t, filepath.Join(d.dir, "shm"), "sensor/a", stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	dumps := filepath.Join(d.dir, "dumps")
	seen := map[string]fs.FileMode{}
	done := make(chan struct{})
	go func() { // the tables wait for their upload under .edr-upload-tmp
		defer close(done)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			filepath.WalkDir(filepath.Join(dumps, ".edr-upload-tmp"), func(p string, e fs.DirEntry, err error) error {
				if err == nil {
					if info, err := e.Info(); err == nil {
						seen[p] = info.Mode()
					}
				}
				return nil
			})
			if n := len(seen); n > 5 && hasParquet(seen) {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	if code, out, errs := runBin(t, "trigger", "--socket", d.sock, "--reason", "modes"); code != 0 {
		t.Fatalf("trigger: %s %s", out, errs)
	}
	<-done
	if !hasParquet(seen) {
		t.Fatalf("no Parquet file seen waiting for its upload: %v", seen)
	}
	for p, m := range seen {
		want := fs.FileMode(0o600)
		if m.IsDir() {
			want = fs.ModeDir | 0o700
		}
		if m != want {
			t.Errorf("%s is %v, want %v (dump_mode 0600)", p, m, want)
		}
	}
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(dumps, ".edr-upload.sent"))
		return err == nil
	}, "the ledger")
	for _, n := range []string{".edr-upload.journal", ".edr-upload.sent"} {
		if st, err := os.Stat(filepath.Join(dumps, n)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600 (dump_mode)", n, st.Mode(), err)
		}
	}
}

func hasParquet(m map[string]fs.FileMode) bool {
	for p := range m {
		if strings.HasSuffix(p, ".parquet") {
			return true
		}
	}
	return false
}
