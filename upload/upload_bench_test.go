//go:build !ecu

package upload

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/edr-lite/edr-lite/internal/s3test"
)

// uploadRound uploads the file at p to a fresh key twice, timed apart:
// through sendFile (HEAD, CRC32C pass, multipart parts with their CRC32C,
// FULL_OBJECT complete, HEAD to confirm) and as one plain PutObject of the
// same bytes by the same SDK client (the baseline: no checksum, no HEAD,
// one request). It returns the seconds of each.
func uploadRound(b testing.TB, c *client, p string, size int64, partSize int64, round int) (float64, float64) {
	ctx := context.Background()
	t0 := time.Now()
	if _, err := c.sendFile(ctx, p, fmt.Sprintf("queue/%d", round), sendOpts{PartSize: partSize}); err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	key := fmt.Sprintf("plain/%d", round)
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &c.bucket, Key: &key, Body: f, ContentLength: aws.Int64(size)}); err != nil {
		b.Fatal(err)
	}
	t2 := time.Now()
	return t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds()
}

// BenchmarkUpload compares the queue's upload of a 48 MiB dump (8 MiB
// parts) with a plain PUT of the same bytes by the same client, to the
// local versitygw, interleaved: each op is one round of both. It reports
// each in MB/s and the median over rounds of the per-round ratio
// queue/plain.
func BenchmarkUpload(b *testing.B) {
	c, o, p := uploadSetup(b)
	var q, plain, ratios []float64
	round := 0
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		tq, tp := uploadRound(b, c, p, benchSize, o.PartSize, round)
		round++
		q, plain, ratios = append(q, tq), append(plain, tp), append(ratios, tp/tq)
	}
	b.ReportMetric(benchSize/medianOf(q)/1e6, "queue-MB/s")
	b.ReportMetric(benchSize/medianOf(plain)/1e6, "plain-put-MB/s")
	b.ReportMetric(medianOf(ratios), "queue/plain")
}

const benchSize = 48 << 20

func uploadSetup(tb testing.TB) (*client, Options, string) {
	srv := s3test.Start(tb)
	srv.CreateBucket("fleet")
	o, err := Options{Endpoint: srv.Endpoint, Bucket: "fleet", AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, PathStyle: true}.Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return newClient(&o), o, randomFileTB(tb, tb.TempDir(), "dump.pack", benchSize)
}

func medianOf(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
