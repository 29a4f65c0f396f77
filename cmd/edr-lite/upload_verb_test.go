package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

func runBinEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(edrBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestUploadVerb uploads dumps one-off with flags and credentials from the
// environment, again (already there), and fails clearly on bad usage and a
// missing bucket.
func TestUploadVerb(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	a, b := writeTestDump(t, dir, "a.pack"), writeBrakeDump(t, dir)
	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	args := []string{"upload", "--endpoint", srv.Endpoint, "--bucket", "fleet", "--prefix", "p", "--vehicle", "car-1", a, b}
	code, out, errs := runBinEnv(t, env, args...)
	if code != 0 || strings.Count(out, "uploaded, crc32c") != 2 || !strings.Contains(out, "s3://fleet/p/vehicle=car-1/date=") {
		t.Fatalf("upload: %d\n%s\n%s", code, out, errs)
	}
	for _, p := range []string{a, b} {
		want, _ := os.ReadFile(p)
		var found bool
		for _, o := range srv.List("fleet", "p/vehicle=car-1/") {
			if strings.HasSuffix(o.Key, "/"+p[len(dir)+1:]) {
				found = bytes.Equal(srv.Get("fleet", o.Key), want)
			}
		}
		if !found {
			t.Errorf("%s not in the bucket byte for byte", p)
		}
	}
	code, out, _ = runBinEnv(t, env, args...)
	if code != 0 || strings.Count(out, "already in the bucket") != 2 {
		t.Errorf("second upload: %d\n%s", code, out)
	}
	if code, _, errs := runBinEnv(t, env, "upload", a); code != 2 || !strings.Contains(errs, "no endpoint") {
		t.Errorf("no endpoint: %d %s", code, errs)
	}
	code, _, errs = runBinEnv(t, env, "upload", "--endpoint", srv.Endpoint, "--bucket", "nope-bucket", a)
	if code != 1 || !strings.Contains(errs, "bucket does not exist") || !strings.Contains(errs, a) {
		t.Errorf("missing bucket: %d %s", code, errs)
	}
	code, _, errs = runBinEnv(t, []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}, "upload", "--endpoint", srv.Endpoint, "--bucket", "fleet", a)
	if code != 2 || !strings.Contains(errs, "no credentials") {
		t.Errorf("no credentials: %d %s", code, errs)
	}
}
