package upload

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync/atomic"
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
	s3conn // the SDK's client, its transport, the limiter and the stall timeout (client_s3.go); nothing in the ECU build
	bucket string
	sent   atomic.Int64 // bytes the request in flight sent so far (a rewind for a resend lowers it)
	total  atomic.Int64 // bytes sent by every request, resends included: only ever grows
	summed atomic.Int64 // files read for their CRC32Cs (sumFile calls)
	// bucketOK: a HeadBucket found the bucket; a HEAD's 404 then means no
	// such object. Cleared by any error naming a missing bucket.
	bucketOK atomic.Bool
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

// noteBucket clears bucketOK when err names a missing bucket: the next
// HEAD's 404 asks the bucket again.
func (c *client) noteBucket(err error) {
	if errors.Is(err, ErrNoBucket) {
		c.bucketOK.Store(false)
	}
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
