//go:build !ecu

// The S3 calls, through aws-sdk-go-v2: left out of the ECU build
// (client_ecu.go), which does not upload.

package upload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// s3Built: this build uploads (Options.Resolve refuses uploads otherwise).
const s3Built = true

// s3conn is the SDK's client and its HTTP transport, the bandwidth
// limiter every request body is read through and the stall timeout.
type s3conn struct {
	s3    *s3.Client
	tr    *http.Transport
	lim   *limiter
	stall time.Duration
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
	return &client{s3conn: s3conn{s3: c, tr: tr, lim: newLimiter(o.Bandwidth), stall: o.Stall}, bucket: o.Bucket}
}

// close drops the idle connections (and their goroutines).
func (c *client) close() { c.tr.CloseIdleConnections() }

type staticCreds struct{ ak, sk, token string }

func (s staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: s.ak, SecretAccessKey: s.sk, SessionToken: s.token, Source: "edr-lite"}, nil
}

// head asks for key's size and CRC32C (ChecksumMode ENABLED). A HEAD's
// answer has no body, so its 404 does not say whether the object or the
// bucket is missing: the first 404 (and the first after an error naming a
// missing bucket) asks the bucket (HeadBucket), so a missing bucket is
// ErrNoBucket before any byte of a dump is sent, not "no object yet".
func (c *client) head(ctx context.Context, key string) (object, error) {
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &c.bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket" {
			c.bucketOK.Store(false)
			return object{}, err
		}
		if !notFound(err) {
			return object{}, err
		}
		if !c.bucketOK.Load() {
			if _, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &c.bucket}); err != nil {
				if notFound(err) {
					return object{}, fmt.Errorf("%w: HeadBucket %s: %v", ErrNoBucket, c.bucket, err)
				}
				return object{}, err
			}
			c.bucketOK.Store(true)
		}
		return object{}, nil
	}
	o := object{Exists: true, Size: aws.ToInt64(out.ContentLength), CRC32C: aws.ToString(out.ChecksumCRC32C), Type: string(out.ChecksumType)}
	return o, nil
}

// notFound reports a 404 without a body (HEAD) or a NoSuchKey.
func notFound(err error) bool {
	var nf *types.NotFound
	var ae smithy.APIError
	return errors.As(err, &nf) || (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey")
}

// put sends f whole in one PUT with its CRC32C; the server refuses the
// object when the bytes it got do not match.
func (c *client) put(ctx context.Context, key string, f *os.File, size int64, crc uint32) error {
	ctx, b, done := c.body(ctx, f, 0, size)
	defer done()
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &c.bucket, Key: &key, Body: b, ContentLength: aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: aws.String(crcB64(crc))})
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

// isTLSError reports whether err is a failed TLS handshake: a certificate
// not trusted, a name that does not match, a server not speaking TLS
// (classify). Here, not in errors.go: the ECU build links no crypto/tls.
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &record) || errors.As(err, &alert)
}

// apiErrorClass is the sentinel of an error the S3 server named by code
// (classify), or nil.
func apiErrorClass(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
			"AuthorizationHeaderMalformed", "InvalidSecurity", "Forbidden":
			return ErrCredentials
		case "NoSuchBucket":
			return ErrNoBucket
		}
	}
	return nil
}
