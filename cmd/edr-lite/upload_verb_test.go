package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

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
	if code != 0 || strings.Count(out, "uploaded, crc32c") != 2 || !strings.Contains(out, "s3://fleet/p/vehicle=car-1/date=2025-12-02/") {
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
	layout := filepath.Join(dir, "edr.demo.Speed.layout")
	os.WriteFile(layout, []byte("f32le speed (m/s)\n"), 0o644)
	code, out, errs = runBinEnv(t, env, append(args[:len(args)-2:len(args)-2], "--parquet", "--schema", "vehicle/speed="+layout, b)...)
	if code != 0 || !strings.Contains(out, "already in the bucket") || !strings.Contains(out, "parquet -> s3://fleet/p/parquet/edr.demo.Speed/vehicle=car-1/date=2025-12-02/brake.parquet") ||
		strings.Count(out, "parquet -> ") != 3 {
		t.Errorf("upload --parquet: %d\n%s\n%s", code, out, errs)
	}
	// the [upload] section of a configuration file, a flag over it
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[upload]\nendpoint = %q\nbucket = \"fleet\"\naccess_key = %q\nsecret_key = %q\nprefix = \"cfg\"\nvehicle = \"car-9\"\n",
		srv.Endpoint, s3test.AccessKey, s3test.SecretKey)), 0o600)
	code, out, errs = runBin(t, "upload", "--config", cfg, "--prefix", "flag", a)
	if code != 0 || !strings.Contains(out, "s3://fleet/flag/vehicle=car-9/date=2025-12-02/a.pack: ") {
		t.Errorf("upload --config: %d\n%s\n%s", code, out, errs)
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

// TestUploadParquetBeside: with upload.parquet the recorder converts each
// dump and uploads its tables beside it, the typed topic decoded with
// upload.parquet_schema.
func TestUploadParquetBeside(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	layout := filepath.Join(t.TempDir(), "sensor.A.layout")
	os.WriteFile(layout, []byte("u8 counter\npad 31\n"), 0o644)
	rec, logs := uploadRecorder(t, t.TempDir(), fmt.Sprintf(`endpoint = %q
bucket = "fleet"
access_key = %q
secret_key = %q
vehicle = "car-3"
parquet = true
parquet_schema = { "sensor/a" = %q }
`, srv.Endpoint, s3test.AccessKey, s3test.SecretKey, layout))
	p := rec.trigger("--reason", "with-tables")
	waitFor(t, func() bool { return rec.status().Upload.Uploaded == 1 }, "the dump and its tables uploaded")
	in := readInfoJSON(t, p)
	name := strings.TrimSuffix(filepath.Base(p), ".pack")
	objs := map[string]int64{}
	for _, o := range srv.List("fleet", "") {
		objs[o.Key] = o.Size
	}
	day := time.Unix(0, in.Triggers[0].TimeNs).UTC().Format("2006-01-02")
	for _, table := range []string{"messages", "dumps", "sensor.A"} {
		key := fmt.Sprintf("edr/parquet/%s/vehicle=car-3/date=%s/%s.parquet", table, day, name)
		if _, ok := objs[key]; !ok {
			t.Errorf("no %s in the bucket: %v\nlogs:\n%s", key, objs, logs.String())
			continue
		}
		b := srv.Get("fleet", key)
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		want := int64(in.Messages)
		if table == "dumps" {
			want = 1
		}
		if pf.NumRows() != want {
			t.Errorf("%s: %d rows, want %d", key, pf.NumRows(), want)
		}
		if _, ok := pf.Schema().Lookup("counter"); table == "sensor.A" && !ok {
			t.Errorf("%s: no counter column: %v", key, pf.Schema())
		}
	}
	if _, ok := objs[fmt.Sprintf("edr/vehicle=car-3/date=%s/%s.pack", day, name)]; !ok {
		t.Errorf("the dump is not in the bucket: %v", objs)
	}
}
