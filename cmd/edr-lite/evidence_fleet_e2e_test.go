package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

// TestE2EFleetSeesSignatures (issue 37 item 5): a signing recorder that
// uploads (with Parquet, deleting after the upload) writes each dump's
// signature and chain position into the upload ledger and the Parquet
// dumps table; deleting after the upload is recorded in the chain, so
// verify --chain still reports nothing.
func TestE2EFleetSeesSignatures(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	priv, pub := opensslKeys(t, dir, "car")
	shmDir, dumpDir := filepath.Join(dir, "shm"), filepath.Join(dir, "dumps")
	sock, cfg := filepath.Join(dir, "edr.sock"), filepath.Join(dir, "edr.toml")
	os.MkdirAll(shmDir, 0o700)
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
pre = "200ms"
post = "0s"
guard = "0s"
max_dumps_per_minute = 0
max_manual_dumps_per_minute = 0
[rotation]
min_free_disk = 0
[[source.shm]]
dir = %q
[control]
socket = %q
[upload]
endpoint = %q
bucket = "fleet"
access_key = %q
secret_key = %q
vehicle = "car-9"
parquet = true
delete_after_upload = true
retry_min = "50ms"
retry_max = "200ms"
[evidence]
sign_key = %q
`, dumpDir, shmDir, sock, srv.Endpoint, s3test.AccessKey, s3test.SecretKey, priv)), 0o600)
	logs := &syncBuffer{}
	rec := startUploadRecorder(t, cfg, sock, logs)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	publishUntil(t, shmDir, "vehicle/speed", stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	var names []string
	for i := range 3 {
		names = append(names, filepath.Base(rec.trigger("--reason", fmt.Sprint("brake-", i))))
	}
	waitLong(t, 30*time.Second, func() bool { return rec.status().Upload.Uploaded == 3 }, "3 dumps uploaded")
	st := rec.status()
	if st.Dumps.SigningKey == "" || st.Dumps.ChainHead != 3 {
		t.Fatalf("status: %+v", st.Dumps)
	}

	// The ledger: one line per dump with its seal.
	f, err := os.Open(filepath.Join(dumpDir, ".edr-upload.sent"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type sealRec struct {
		Status, Chain string
		KeyID         string `json:"key_id"`
		Counter       uint64
	}
	seen := map[string]sealRec{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			File string   `json:"file"`
			Seal *sealRec `json:"seal"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Seal == nil {
			t.Fatalf("ledger line %s: %v", sc.Text(), err)
		}
		seen[r.File] = *r.Seal
	}
	for i, n := range names {
		s := seen[n]
		if s.Status != "valid" || s.KeyID != st.Dumps.SigningKey || s.Chain != st.Dumps.Chain || s.Counter != uint64(i+1) {
			t.Errorf("%s: ledger seal %+v, want valid, key %s, chain %s #%d", n, s, st.Dumps.SigningKey, st.Dumps.Chain, i+1)
		}
	}

	// The Parquet dumps table at the server.
	var found int
	for _, o := range srv.List("fleet", "") {
		if !strings.Contains(o.Key, "/dumps/") {
			continue
		}
		b := srv.Get("fleet", o.Key)
		rows, err := parquet.Read[struct {
			File         string  `parquet:"file"`
			Signature    *string `parquet:"signature,optional"`
			SignedBy     *string `parquet:"signed_by,optional"`
			Chain        *string `parquet:"chain,optional"`
			ChainCounter *int64  `parquet:"chain_counter,optional"`
			Seal         *string `parquet:"seal,optional"`
		}](bytes.NewReader(b), int64(len(b)))
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %v, %d rows", o.Key, err, len(rows))
		}
		r := rows[0]
		if r.Signature == nil || *r.Signature != "valid" || r.SignedBy == nil || *r.SignedBy != st.Dumps.SigningKey ||
			r.Chain == nil || *r.Chain != st.Dumps.Chain || r.ChainCounter == nil || r.Seal == nil {
			t.Errorf("%s: dumps row %+v", o.Key, r)
		}
		found++
	}
	if found != 3 {
		t.Errorf("%d dumps tables at the server, want 3", found)
	}

	// delete_after_upload removed the dumps; the chain knows why.
	if left, _ := filepath.Glob(filepath.Join(dumpDir, "*.pack")); len(left) != 0 {
		t.Fatalf("dumps left after their upload: %v", left)
	}
	code, out, errs := runBin(t, "verify", "--key", pub, "--chain", dumpDir)
	if code != 0 || !strings.Contains(out, "3 rotated") {
		t.Fatalf("verify --chain after delete_after_upload: exit %d\n%s%s", code, out, errs)
	}
}
