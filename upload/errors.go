package upload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/aws/smithy-go"
)

var (
	// ErrOptions is wrapped by every OptionError.
	ErrOptions = errors.New("upload: invalid options")
	// ErrCredentials: the server rejected the credentials (unknown access
	// key, bad signature, access denied).
	ErrCredentials = errors.New("upload: credentials rejected by the server")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("upload: bucket does not exist")
	// ErrUnreachable: the server could not be reached (refused, reset,
	// timed out, name not resolved).
	ErrUnreachable = errors.New("upload: server unreachable")
	// ErrNotConfirmed: after an upload the server's object does not have
	// the local file's size and CRC32C.
	ErrNotConfirmed = errors.New("upload: server did not confirm the object")
	// ErrMissing: the local dump is gone (deleted before it was uploaded).
	ErrMissing = errors.New("upload: local dump is missing")
	// ErrStopped: the uploader stopped while the upload ran; it resumes at
	// the next start.
	ErrStopped = errors.New("upload: stopped")
	// ErrJournal: the queue's journal could not be read or written (a full
	// disk, say); the queue goes on in memory.
	ErrJournal = errors.New("upload: journal")
)

// Error is one failed step of an upload: the file, the object key, what was
// done, and the cause (one of the sentinels above when classified, through
// Unwrap, and the server's or the system's error).
type Error struct {
	File string // local file
	Key  string // object key
	Op   string // "head", "put", "create multipart", "upload part 3", ...
	Kind error  // ErrCredentials, ErrNoBucket, ErrUnreachable, ... or nil
	Err  error
}

func (e *Error) Error() string {
	what := e.Err.Error()
	if e.Kind != nil {
		what = e.Kind.Error() + ": " + what
	}
	return fmt.Sprintf("%s -> %s: %s: %s", e.File, e.Key, e.Op, what)
}

// Unwrap returns the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// serverWide reports whether err says nothing about one file but about the
// server or the link (credentials, bucket, network): the whole queue then
// backs off, not only the entry.
func serverWide(err error) bool {
	return errors.Is(err, ErrCredentials) || errors.Is(err, ErrNoBucket) || errors.Is(err, ErrUnreachable)
}

// classify returns the sentinel err belongs to, or nil.
func classify(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
			"AuthorizationHeaderMalformed", "InvalidSecurity", "Forbidden":
			return ErrCredentials
		case "NoSuchBucket":
			return ErrNoBucket
		}
		return nil
	}
	var oe *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &oe), errors.As(err, &dnsErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, errStalled):
		return ErrUnreachable
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case 403:
			return ErrCredentials
		case 502, 503, 504:
			return ErrUnreachable
		}
	}
	return nil
}

var errStalled = errors.New("no progress")
