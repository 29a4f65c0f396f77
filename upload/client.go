package upload

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// client is the S3 side: the SDK client configured the way this package
// needs it, and the calls an upload makes.
//
// The SDK's own retries are off (the queue retries, with its back-off,
// journal and status); the SDK computes no checksum of its own (we send the
// CRC32C of every part and of the whole object, and the server checks
// them); payloads are sent UNSIGNED-PAYLOAD (the CRC32C covers them; the
// signature still covers the headers, the checksums among them), so a body
// is read once, through the bandwidth limiter.
type client struct {
	s3     *s3.Client
	bucket string
	lim    *limiter
	stall  time.Duration
	tr     *http.Transport
	sent   atomic.Int64 // bytes sent by the request in flight
	total  atomic.Int64 // bytes sent by every request
}

func newClient(o *Options) *client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: o.Stall,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
	}
	cfg := aws.Config{
		Region:      o.Region,
		Credentials: aws.NewCredentialsCache(staticCreds{o.AccessKey, o.SecretKey, o.SessionToken}),
		HTTPClient:  &http.Client{Transport: tr},
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
	c := s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.BaseEndpoint = aws.String(o.Endpoint)
		so.UsePathStyle = o.PathStyle
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		so.APIOptions = append(so.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
	return &client{s3: c, bucket: o.Bucket, lim: newLimiter(o.Bandwidth), stall: o.Stall, tr: tr}
}

// close drops the idle connections (and their goroutines).
func (c *client) close() { c.tr.CloseIdleConnections() }

type staticCreds struct{ ak, sk, token string }

func (s staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: s.ak, SecretAccessKey: s.sk, SessionToken: s.token, Source: "edr-lite"}, nil
}

// crcB64 spells a CRC32C as S3 headers do: base64 of its 4 big-endian bytes.
func crcB64(c uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, c))
}

// object is what the server says of a key.
type object struct {
	Exists bool
	Size   int64
	CRC32C string // base64, "" when the server keeps none
	Type   string // FULL_OBJECT or COMPOSITE
}

// head asks for key's size and CRC32C (ChecksumMode ENABLED).
func (c *client) head(ctx context.Context, key string) (object, error) {
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &c.bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		var nf *types.NotFound
		var ae smithy.APIError
		if errors.As(err, &nf) || (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey") {
			return object{}, nil
		}
		return object{}, err
	}
	o := object{Exists: true, Size: aws.ToInt64(out.ContentLength), CRC32C: aws.ToString(out.ChecksumCRC32C), Type: string(out.ChecksumType)}
	return o, nil
}

// body opens a section of f for one request and a watchdog over it.
func (c *client) body(ctx context.Context, f *os.File, off, n int64) (context.Context, *bodyReader, func()) {
	var seen atomic.Int64
	ctx, done := watchdog(ctx, c.stall, &seen)
	c.sent.Store(0)
	return ctx, &bodyReader{ctx: ctx, sr: io.NewSectionReader(f, off, n), lim: c.lim, sent: &c.sent, seen: &seen}, done
}

// cause returns the watchdog's cause when it cancelled the request.
func cause(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w for %v: %v", errStalled, "the stall timeout", err)
	}
	return err
}

// put sends f whole in one PUT with its CRC32C; the server refuses the
// object when the bytes it got do not match.
func (c *client) put(ctx context.Context, key string, f *os.File, size int64, crc uint32) error {
	ctx, b, done := c.body(ctx, f, 0, size)
	defer done()
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &c.bucket, Key: &key, Body: b, ContentLength: aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: aws.String(crcB64(crc))})
	c.total.Add(c.sent.Load())
	return cause(ctx, err)
}

// create starts a multipart upload whose object checksum is the CRC32C of
// the whole object (FULL_OBJECT), comparable with the local file's.
func (c *client) create(ctx context.Context, key string) (string, error) {
	out, err := c.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &c.bucket, Key: &key,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.UploadId), nil
}

// findUpload returns the newest multipart upload of key the server holds
// (one whose id the journal lost: a crash between its creation and the
// journal's write, or a one-off upload run again), "" when none.
func (c *client) findUpload(ctx context.Context, key string) (string, error) {
	out, err := c.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &c.bucket, Prefix: &key})
	if err != nil {
		return "", err
	}
	var best types.MultipartUpload
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) == key && (best.Initiated == nil || (u.Initiated != nil && u.Initiated.After(*best.Initiated))) {
			best = u
		}
	}
	return aws.ToString(best.UploadId), nil
}

// serverPart is a part the server holds.
type serverPart struct {
	Number int32
	Size   int64
	ETag   string
	CRC32C string
}

// errNoUpload: the server does not know the upload id (aborted, expired,
// completed).
var errNoUpload = errors.New("upload: no such multipart upload")

// parts lists the parts of an upload, bounded by MaxParts.
func (c *client) parts(ctx context.Context, key, id string) (map[int32]serverPart, error) {
	out := map[int32]serverPart{}
	var marker *string
	for range MaxParts/1000 + 1 {
		res, err := c.s3.ListParts(ctx, &s3.ListPartsInput{Bucket: &c.bucket, Key: &key, UploadId: &id, PartNumberMarker: marker})
		if err != nil {
			var ae smithy.APIError
			if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload" {
				return nil, errNoUpload
			}
			return nil, err
		}
		for _, p := range res.Parts {
			n := aws.ToInt32(p.PartNumber)
			out[n] = serverPart{Number: n, Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag), CRC32C: aws.ToString(p.ChecksumCRC32C)}
		}
		if !aws.ToBool(res.IsTruncated) || res.NextPartNumberMarker == nil {
			return out, nil
		}
		marker = res.NextPartNumberMarker
	}
	return out, nil
}

// part sends part n (from 1) of f.
func (c *client) part(ctx context.Context, key, id string, n int32, f *os.File, off, size int64, crc uint32) (string, error) {
	ctx, b, done := c.body(ctx, f, off, size)
	defer done()
	out, err := c.s3.UploadPart(ctx, &s3.UploadPartInput{Bucket: &c.bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
		Body: b, ContentLength: aws.Int64(size), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: aws.String(crcB64(crc))})
	c.total.Add(c.sent.Load())
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload" {
			return "", errNoUpload
		}
		return "", cause(ctx, err)
	}
	return aws.ToString(out.ETag), nil
}

// complete finishes an upload, giving the whole object's CRC32C for the
// server to check against the parts it combined.
func (c *client) complete(ctx context.Context, key, id string, parts []serverPart, crc uint32) error {
	sort.Slice(parts, func(i, j int) bool { return parts[i].Number < parts[j].Number })
	cp := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.Number), ETag: aws.String(p.ETag), ChecksumCRC32C: aws.String(p.CRC32C)}
	}
	_, err := c.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &c.bucket, Key: &key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cp},
		ChecksumCRC32C:  aws.String(crcB64(crc)), ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload" {
			return errNoUpload
		}
	}
	return err
}

// abortAll drops every multipart upload of key still open (orphans of
// crashes between their creation and the journal's write), best effort.
func (c *client) abortAll(ctx context.Context, key string) {
	out, err := c.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &c.bucket, Prefix: &key})
	if err != nil {
		return
	}
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) == key {
			_ = c.abort(ctx, key, aws.ToString(u.UploadId))
		}
	}
}

// abort drops an upload the queue gave up (the file vanished).
func (c *client) abort(ctx context.Context, key, id string) error {
	_, err := c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &c.bucket, Key: &key, UploadId: &id})
	return err
}
