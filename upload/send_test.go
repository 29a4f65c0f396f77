//go:build !ecu

package upload

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

func testOptions(srv *s3test.Server, bucket string) Options {
	return Options{Endpoint: srv.Endpoint, Bucket: bucket, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey,
		PathStyle: true, Prefix: "fleet", Vehicle: "v1", PartSize: MinPartSize, RetryMin: 10 * time.Millisecond,
		RetryMax: 200 * time.Millisecond}
}

func randomFile(t *testing.T, dir, name string, n int) string {
	t.Helper()
	return randomFileTB(t, dir, name, n)
}

func randomFileTB(t testing.TB, dir, name string, n int) string {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSendFileOnePutAndMultipart(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	o, err := testOptions(srv, "fleet").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(&o)
	dir := t.TempDir()
	for _, n := range []int{0, 1000, MinPartSize, 2*MinPartSize + 12345} {
		p := randomFile(t, dir, "f"+string(rune('a'+n%26)), n)
		key := "k/" + filepath.Base(p)
		res, err := c.sendFile(context.Background(), p, key, sendOpts{PartSize: o.PartSize})
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		wantParts := 0
		if n > MinPartSize {
			wantParts = 3
		}
		if res.Parts != wantParts || res.Already || res.Size != int64(n) {
			t.Errorf("size %d: %+v", n, res)
		}
		want, _ := os.ReadFile(p)
		if got := srv.Get("fleet", key); !bytes.Equal(got, want) {
			t.Fatalf("size %d: object differs from the file (%d vs %d bytes)", n, len(got), len(want))
		}
		obj, err := c.head(context.Background(), key)
		if err != nil || obj.CRC32C != res.CRC32C || (wantParts > 0 && obj.Type != "FULL_OBJECT") {
			t.Errorf("size %d: head %+v %v, want crc %s FULL_OBJECT", n, obj, err, res.CRC32C)
		}
		again, err := c.sendFile(context.Background(), p, key, sendOpts{PartSize: o.PartSize})
		if err != nil || !again.Already {
			t.Errorf("size %d: second send: %+v %v, want already there", n, again, err)
		}
	}
}

// TestSendFileResumes cuts a multipart upload after its first part (the
// bandwidth cap slows it, the server is killed) and checks the next attempt
// keeps the part the server holds, found by listing the uploads of the key.
func TestSendFileResumes(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	opts := testOptions(srv, "fleet")
	opts.Bandwidth = 8 << 20
	o, err := opts.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(&o)
	p := randomFile(t, t.TempDir(), "big", 3*MinPartSize+777)
	ids := []string{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil && len(srv.Uploads("fleet")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		// the first part takes ~0.6s at 8MiB/s; kill during the second
		for c.total.Load() < MinPartSize+MinPartSize/2 { // total counts the request in flight
			if ctx.Err() != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		srv.Stop()
	}()
	_, err = c.sendFile(ctx, p, "big", sendOpts{PartSize: o.PartSize, SetUploadID: func(id string) error { ids = append(ids, id); return nil }})
	cancel()
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("send with the server killed: %v, want ErrUnreachable", err)
	}
	if len(ids) != 1 || ids[0] == "" {
		t.Fatalf("upload ids recorded: %q", ids)
	}
	srv.Restart()
	res, err := c.sendFile(context.Background(), p, "big", sendOpts{PartSize: o.PartSize})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed < 1 || res.Parts != 4 {
		t.Errorf("resumed %d of %d parts, want >= 1 of 4", res.Resumed, res.Parts)
	}
	want, _ := os.ReadFile(p)
	if !bytes.Equal(srv.Get("fleet", "big"), want) {
		t.Fatal("resumed object differs from the file")
	}
	if u := srv.Uploads("fleet"); len(u) != 0 {
		t.Errorf("%d multipart uploads left on the server", len(u))
	}
}

// TestOrphanUploadsAreAborted: multipart uploads of the key the journal
// does not know (a crash right after their creation) are adopted (the
// newest) or aborted once the object is complete.
func TestOrphanUploadsAreAborted(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	o, err := testOptions(srv, "fleet").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(&o)
	defer c.close()
	ctx := context.Background()
	for range 2 {
		if _, err := c.create(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	p := randomFile(t, t.TempDir(), "f", MinPartSize+10)
	if _, err := c.sendFile(ctx, p, "k", sendOpts{PartSize: o.PartSize}); err != nil {
		t.Fatal(err)
	}
	if u := srv.Uploads("fleet"); len(u) != 0 {
		t.Errorf("%d uploads of the key left open", len(u))
	}
}
