//go:build !ecu

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/upload"
)

func init() {
	register(&verb{name: "upload", summary: "upload dumps to S3-compatible object storage now (one-off)", run: runUpload})
}

func runUpload(e *env) int {
	c := newCommand(e, "upload", "edr-lite upload [--config FILE] [--endpoint URL --bucket B ...] DUMP...",
		`Upload dumps to S3-compatible object storage now, outside the recorder's
queue: the same keys, CRC32C checks and confirmation as "edr-lite run" with an
[upload] section (see docs/fleet.md). Each file is sent in one PUT, or in parts
above --part-size, with its CRC32C, which the server checks; the file is
confirmed by asking the server for the object's size and CRC32C afterwards. A
file the bucket already holds (same size and CRC32C) is not sent again, and a
multipart upload cut by an earlier run resumes from the parts the server kept.

Settings come from the [upload] section of --config, then from the flags,
which win. Credentials: upload.access_key / secret_key, else the environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); never a flag, so they stay out of
the process list. Exit 0 when every file is confirmed, 1 at the first failure
(named with the file, the key, the step and the cause).`,
		"edr-lite upload --config /etc/edr-lite.toml /var/lib/edr-lite/dumps/*.pack\n"+
			"AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... edr-lite upload --endpoint https://s3.eu-west-1.amazonaws.com \\\n"+
			"    --path-style=false --bucket fleet-dumps --vehicle car-17 --parquet dump.pack", 1, -1)
	cfgPath := c.fs.String("config", "", "read the [upload] section of this configuration file")
	endpoint := c.fs.String("endpoint", "", "S3 endpoint URL (upload.endpoint)")
	bucket := c.fs.String("bucket", "", "bucket (upload.bucket)")
	region := c.fs.String("region", "", "region (upload.region; default "+upload.DefaultRegion+")")
	prefix := c.fs.String("prefix", "", "{prefix} of the key (upload.prefix)")
	vehicle := c.fs.String("vehicle", "", "{vehicle} of the key (upload.vehicle; default: the host name)")
	key := c.fs.String("key", "", "key template (upload.key; default "+upload.DefaultKey+")")
	pathStyle := c.fs.Bool("path-style", true, "address the bucket as ENDPOINT/BUCKET (upload.path_style)")
	partSize := c.fs.String("part-size", "", "multipart above this size (upload.part_size; default 8MiB)")
	bandwidth := c.fs.String("bandwidth", "", "cap in bytes per second, e.g. 256KiB (upload.bandwidth)")
	parquet := c.fs.Bool("parquet", false, "also convert each dump to Parquet and upload it (upload.parquet)")
	var schemas multiFlag
	c.fs.Var(&schemas, "schema", "TOPIC=LAYOUTFILE: decode TOPIC with this packed-struct layout in the Parquet files (repeatable)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	set := map[string]bool{}
	c.fs.Visit(func(f *flagT) { set[f.Name] = true })
	var f *config.File
	if *cfgPath != "" {
		var err error
		if f, err = config.Load(*cfgPath); err != nil {
			return c.fail(err)
		}
	} else {
		f, _ = config.Parse("defaults", nil)
	}
	u := &f.Upload
	str := func(flag string, dst *string, v string) {
		if set[flag] {
			*dst = v
		}
	}
	str("endpoint", &u.Endpoint, *endpoint)
	str("bucket", &u.Bucket, *bucket)
	str("region", &u.Region, *region)
	str("prefix", &u.Prefix, *prefix)
	str("vehicle", &u.Vehicle, *vehicle)
	str("key", &u.Key, *key)
	if set["path-style"] {
		u.PathStyle = *pathStyle
	}
	if set["parquet"] {
		u.Parquet = *parquet
	}
	for _, s := range []struct {
		flag string
		v    string
		dst  *config.Size
	}{{"part-size", *partSize, &u.PartSize}, {"bandwidth", *bandwidth, &u.Bandwidth}} {
		if set[s.flag] {
			n, err := units.ParseSize(s.v)
			if err != nil {
				return c.usageErr("--%s %q: %v", s.flag, s.v, err)
			}
			*s.dst = config.Size(n)
		}
	}
	if len(schemas) > 0 {
		if u.ParquetSchema == nil {
			u.ParquetSchema = map[string]string{}
		}
		for _, s := range schemas {
			topic, file, ok := strings.Cut(s, "=")
			if !ok || topic == "" || file == "" {
				return c.usageErr("--schema %q: want TOPIC=LAYOUTFILE", s)
			}
			u.ParquetSchema[topic] = file
		}
	}
	if u.Endpoint == "" {
		return c.usageErr("no endpoint: give --endpoint or a --config with an [upload] section")
	}
	o, types, _, err := f.UploadOptions()
	if err != nil {
		return c.usageErr("%v", err)
	}
	var convert upload.ConvertFunc
	if o.Parquet {
		convert = daemon.ParquetConverter(o.Vehicle, types, 0, nil)
	}
	x, err := upload.NewOneOff(o, convert)
	if err != nil {
		return c.usageErr("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "edr-lite-upload-")
	if err != nil {
		return c.fail(err)
	}
	defer os.RemoveAll(tmp)
	for _, p := range args {
		res, err := uploadOne(ctx, e.stderr, x, p, filepath.Join(tmp, filepath.Base(p)))
		if err != nil {
			return c.fail(err)
		}
		how := fmt.Sprintf("%s uploaded", units.FormatSize(res.Size))
		switch {
		case res.Already:
			how = fmt.Sprintf("%s already in the bucket", units.FormatSize(res.Size))
		case res.Parts > 0:
			how += fmt.Sprintf(" in %d parts", res.Parts)
			if res.Resumed > 0 {
				how += fmt.Sprintf(" (%d resumed from an earlier run)", res.Resumed)
			}
		}
		fmt.Fprintf(e.stdout, "%s -> s3://%s/%s: %s, crc32c %s confirmed\n", p, o.Bucket, res.Key, how, res.CRC32C)
		for _, q := range res.Parquet {
			fmt.Fprintf(e.stdout, "  parquet -> s3://%s/%s: %s\n", o.Bucket, q.Key, units.FormatSize(q.Size))
		}
	}
	return exitOK
}

// uploadOne uploads one dump, with a progress bar on a terminal.
func uploadOne(ctx context.Context, stderr io.Writer, x *upload.OneOff, path, tmp string) (upload.Result, error) {
	if !isTerminal(stderr) {
		return x.Upload(ctx, path, tmp)
	}
	st, err := os.Stat(path)
	if err != nil {
		return upload.Result{}, err
	}
	bar := progressbar.NewOptions64(st.Size(), progressbar.OptionSetWriter(stderr), progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("uploading "+filepath.Base(path)), progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish())
	base := x.Sent()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.Set64(min(x.Sent()-base, st.Size()))
			}
		}
	}()
	res, err := x.Upload(ctx, path, tmp)
	close(done)
	bar.Finish()
	return res, err
}

// printUploadStatus is the upload part of "edr-lite status".
func printUploadStatus(w io.Writer, u *upload.Status) {
	state := u.State
	if u.Paused != "" {
		state += " (" + u.Paused + ")"
	}
	fmt.Fprintf(w, "upload:  %s to s3://%s (%s): %d queued, %d failed, %d uploaded (%s), %d evicted, %d missing; %s sent",
		state, u.Bucket, u.Endpoint, u.Queued, u.Failed, u.Uploaded, units.FormatSize(int64(u.UploadedBytes)), u.Evicted, u.Missing,
		units.FormatSize(int64(u.SentBytes)))
	if u.Window != "" {
		fmt.Fprintf(w, "; window %s (open=%v)", u.Window, u.WindowOpen)
	}
	if u.Bandwidth > 0 {
		fmt.Fprintf(w, "; cap %s/s", units.FormatSize(u.Bandwidth))
	}
	fmt.Fprintln(w)
	if u.Uploading != "" {
		fmt.Fprintf(w, "uploading: %s (%s of this request sent)\n", u.Uploading, units.FormatSize(u.UploadingSent))
	}
	if u.LastError != "" {
		kind := ""
		if u.LastErrorKind != "" {
			kind = ", kind " + u.LastErrorKind
		}
		fmt.Fprintf(w, "last upload error (%s%s): %s\n", u.LastErrorAt, kind, u.LastError)
	}
	if u.LastEvicted != "" {
		fmt.Fprintf(w, "last evicted: %s\n", u.LastEvicted)
	}
	if u.RetryInS > 0 {
		fmt.Fprintf(w, "next upload attempt in %s\n", (time.Duration(u.RetryInS * float64(time.Second))).Round(time.Second))
	}
	if u.JournalError != "" {
		fmt.Fprintf(w, "upload journal error: %s\n", u.JournalError)
	}
	if u.SetAsideFiles > 0 {
		fmt.Fprintf(w, "upload queue files found damaged, set aside: %d (%s)\n", u.SetAsideFiles, strings.Join(u.SetAside, ", "))
	}
}

type flagT = flag.Flag
