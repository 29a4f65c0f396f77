//go:build ecu

// The ECU build leaves the S3 client (and aws-sdk-go-v2) out: Options.Resolve
// refuses every upload, so no client is ever made; these methods only keep
// the queue's code compiling.

package upload

import (
	"context"
	"os"
)

// s3Built: this build does not upload.
const s3Built = false

// s3conn: no S3 client; its methods, promoted to the client, refuse.
type s3conn struct{}

func newClient(o *Options) *client { return &client{bucket: o.Bucket} }

func (s3conn) close() {}

func (s3conn) head(context.Context, string) (object, error) { return object{}, ErrNotInBuild }

func (s3conn) put(context.Context, string, *os.File, int64, uint32) error { return ErrNotInBuild }

func (s3conn) create(context.Context, string) (string, error) { return "", ErrNotInBuild }

func (s3conn) findUpload(context.Context, string) (string, error) { return "", ErrNotInBuild }

func (s3conn) parts(context.Context, string, string) (map[int32]serverPart, error) {
	return nil, ErrNotInBuild
}

func (s3conn) part(context.Context, string, string, int32, *os.File, int64, int64, uint32) (string, error) {
	return "", ErrNotInBuild
}

func (s3conn) complete(context.Context, string, string, []serverPart, uint32) error {
	return ErrNotInBuild
}

func (s3conn) abortAll(context.Context, string) {}

func (s3conn) abort(context.Context, string, string) error { return ErrNotInBuild }

func apiErrorClass(error) error { return nil }

func isTLSError(error) bool { return false }
