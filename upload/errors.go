package upload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

var (
	// ErrNotInBuild: this is the ECU build of edr-lite (go build -tags
	// ecu), which leaves the S3 client out; the full build uploads.
	ErrNotInBuild = errors.New("upload: not in this build of edr-lite (the ECU build, go build -tags ecu): the full build uploads (docs/ecu.md)")
	// ErrOptions is wrapped by every OptionError.
	ErrOptions = errors.New("upload: invalid options")
	// ErrCredentials: the server rejected the credentials (unknown access
	// key, bad signature, access denied).
	ErrCredentials = errors.New("upload: credentials rejected by the server")
	// ErrNoBucket: the bucket does not exist (NoSuchBucket; after a HEAD's
	// bodiless 404, a HeadBucket tells it from a missing object).
	ErrNoBucket = errors.New("upload: bucket does not exist")
	// ErrTLS: the TLS handshake with the server failed (a certificate not
	// trusted, a name that does not match, a server not speaking TLS).
	ErrTLS = errors.New("upload: TLS handshake with the server failed")
	// ErrUnreachable: the server could not be reached (refused, reset,
	// timed out, name not resolved, a request that stalled).
	ErrUnreachable = errors.New("upload: server unreachable")
	// ErrServer: the server answered with an error of its own (HTTP 5xx:
	// internal error, slow down, unavailable).
	ErrServer = errors.New("upload: server error")
	// ErrFile: the local file could not be read.
	ErrFile = errors.New("upload: local file unreadable")
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

// Kinds of failure, as KindOf names them (Status.LastErrorKind, the log's
// kind=). The first five are server-wide: they say nothing about one
// dump, and the whole queue pauses.
const (
	KindCredentials = "credentials"
	KindBucket      = "bucket"
	KindTLS         = "tls"
	KindNetwork     = "network"
	KindServer      = "server"
	KindFile        = "file"   // the local file could not be read
	KindObject      = "object" // the server refused or did not confirm this one object
)

var kinds = []struct {
	err  error
	kind string
	wide bool
}{
	{ErrCredentials, KindCredentials, true}, {ErrNoBucket, KindBucket, true}, {ErrTLS, KindTLS, true},
	{ErrUnreachable, KindNetwork, true}, {ErrServer, KindServer, true}, {ErrFile, KindFile, false},
}

// KindOf names the kind of an upload failure: one of the Kind constants,
// "" for nil.
func KindOf(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return KindObject
}

// Error is one failed step of an upload: the file, the object key, what was
// done, and the cause (one of the sentinels above when classified, through
// Unwrap, and the server's or the system's error).
type Error struct {
	File string // local file
	Key  string // object key
	Op   string // "head", "put", "create multipart", "upload part 3", ...
	Kind error  // ErrCredentials, ErrNoBucket, ErrTLS, ErrUnreachable, ErrServer, ErrFile, ... or nil
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
// server or the link (credentials, bucket, TLS, network, server): the
// whole queue then pauses, not only the entry.
func serverWide(err error) bool {
	for _, k := range kinds {
		if k.wide && errors.Is(err, k.err) {
			return true
		}
	}
	return false
}

// classify returns the sentinel err belongs to, or nil.
func classify(err error) error {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.err
		}
	}
	if k := apiErrorClass(err); k != nil {
		return k
	}
	if isTLSError(err) {
		return ErrTLS
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
		switch c := re.HTTPStatusCode(); {
		case c == 403:
			return ErrCredentials
		case c >= 500 && c <= 599:
			return ErrServer
		}
	}
	return nil
}

var errStalled = errors.New("no progress")
