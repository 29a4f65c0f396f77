package upload

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// fileSums is the CRC32C of a file and of each of its parts, from one read.
type fileSums struct {
	Size  int64
	Whole uint32
	Parts []uint32 // nil when the file goes in one PUT
}

// sumFile reads f once. partSize 0: no parts.
func sumFile(f *os.File, size, partSize int64) (fileSums, error) {
	s := fileSums{Size: size}
	buf := make([]byte, 256<<10)
	whole := crc32.New(castagnoli)
	var part uint32
	var inPart int64
	r := io.NewSectionReader(f, 0, size)
	for off := int64(0); off < size; {
		n, err := r.Read(buf[:min(int64(len(buf)), size-off)])
		if n == 0 && err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the file shrank
			}
			return s, err
		}
		b := buf[:n]
		whole.Write(b)
		for partSize > 0 && len(b) > 0 {
			k := min(int64(len(b)), partSize-inPart)
			part = crc32.Update(part, castagnoli, b[:k])
			inPart += k
			b = b[k:]
			if inPart == partSize {
				s.Parts = append(s.Parts, part)
				part, inPart = 0, 0
			}
		}
		off += int64(n)
	}
	if partSize > 0 && inPart > 0 {
		s.Parts = append(s.Parts, part)
	}
	s.Whole = whole.Sum32()
	return s, nil
}

// sumCache keeps a file's CRC32Cs from one attempt to the next of its
// upload: a file is read for them once per upload, not once per attempt,
// unless it changed (size or modification time) or the part size did.
type sumCache struct {
	size, mtime, partSize int64
	sums                  fileSums
	ok                    bool
}

// sums returns f's CRC32Cs, from c when they are still f's.
func (c *client) sums(f *os.File, st os.FileInfo, partSize int64, cache *sumCache) (fileSums, error) {
	if cache != nil && cache.ok && cache.size == st.Size() && cache.mtime == st.ModTime().UnixNano() && cache.partSize == partSize {
		return cache.sums, nil
	}
	c.summed.Add(1)
	s, err := sumFile(f, st.Size(), partSize)
	if err == nil && cache != nil {
		*cache = sumCache{size: st.Size(), mtime: st.ModTime().UnixNano(), partSize: partSize, sums: s, ok: true}
	}
	return s, err
}

// sendOpts is what one file's upload needs besides the client.
type sendOpts struct {
	// Sums, when set, keeps the file's CRC32Cs across attempts.
	Sums     *sumCache
	PartSize int64
	// UploadID is the multipart upload the journal knows for this key
	// ("" when none).
	UploadID string
	// SetUploadID records a new (or adopted, or dropped: "") upload id in
	// the journal before any part is sent under it. May be nil.
	SetUploadID func(id string) error
	// Window, when set, is asked before each part whether to go on; false
	// stops the upload (resumable) with errWindowClosed.
	Window func() bool
}

var errWindowClosed = errors.New("upload: schedule window closed")

// sendResult says what sendFile did.
type sendResult struct {
	Key     string
	Size    int64
	CRC32C  string
	Already bool // the server held the object already: nothing sent
	Parts   int  // parts of a multipart upload (0: one PUT)
	Resumed int  // parts the server already held from an interrupted upload
}

// sendFile uploads the file at path to key unless the server holds it
// already, resuming an interrupted multipart upload where the server still
// has its parts, and returns once the server confirmed the object: a HEAD
// gives the file's size and CRC32C.
func (c *client) sendFile(ctx context.Context, path, key string, o sendOpts) (sendResult, error) {
	res := sendResult{Key: key}
	fail := func(op string, err error) (sendResult, error) {
		if errors.Is(err, errWindowClosed) || errors.Is(err, ErrMissing) {
			return res, err
		}
		if ctx.Err() != nil && !errors.Is(err, errStalled) {
			return res, &Error{File: path, Key: key, Op: op, Kind: ErrStopped, Err: err}
		}
		e := &Error{File: path, Key: key, Op: op, Kind: classify(err), Err: err}
		switch op {
		case "open", "stat", "read":
			e.Kind = ErrFile
		}
		c.noteBucket(e)
		return res, e
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("%w: %s", ErrMissing, path)
		}
		return fail("open", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail("stat", err)
	}
	res.Size = st.Size()
	partSize := int64(0)
	if res.Size > o.PartSize {
		partSize = o.PartSize
		for (res.Size+partSize-1)/partSize > MaxParts {
			partSize *= 2
		}
	}
	// HEAD first: while the server cannot be reached, the file is not read
	obj, err := c.head(ctx, key)
	if err != nil {
		return fail("head", err)
	}
	sums, err := c.sums(f, st, partSize, o.Sums)
	if err != nil {
		return fail("read", err)
	}
	res.CRC32C = crcB64(sums.Whole)
	if obj.Exists && obj.Size == res.Size && obj.CRC32C == res.CRC32C {
		res.Already = true
		if o.UploadID != "" && o.SetUploadID != nil {
			_ = c.abort(ctx, key, o.UploadID)
			_ = o.SetUploadID("")
		}
		return res, nil
	}
	if partSize == 0 {
		if err := c.put(ctx, key, f, res.Size, sums.Whole); err != nil {
			return fail("put", err)
		}
	} else {
		res.Parts = len(sums.Parts)
		if err := c.sendParts(ctx, f, key, partSize, sums, o, &res); err != nil {
			return fail(err.op, err.err)
		}
	}
	obj, err = c.head(ctx, key)
	if err != nil {
		return fail("confirm", err)
	}
	if !obj.Exists || obj.Size != res.Size || obj.CRC32C != res.CRC32C {
		return fail("confirm", fmt.Errorf("%w: server has exists=%v size %d crc32c %q, local file size %d crc32c %q",
			ErrNotConfirmed, obj.Exists, obj.Size, obj.CRC32C, res.Size, res.CRC32C))
	}
	return res, nil
}

type opErr struct {
	op  string
	err error
}

func (c *client) sendParts(ctx context.Context, f *os.File, key string, partSize int64, sums fileSums, o sendOpts, res *sendResult) *opErr {
	setID := func(id string) error {
		if o.SetUploadID == nil {
			return nil
		}
		return o.SetUploadID(id)
	}
	id := o.UploadID
	if id == "" {
		found, err := c.findUpload(ctx, key)
		if err != nil {
			return &opErr{"list multipart uploads", err}
		}
		id = found
	}
	var have map[int32]serverPart
	if id != "" {
		p, err := c.parts(ctx, key, id)
		switch {
		case errors.Is(err, errNoUpload):
			id = ""
		case err != nil:
			return &opErr{"list parts", err}
		default:
			have = p
		}
	}
	if id == "" {
		nid, err := c.create(ctx, key)
		if err != nil {
			return &opErr{"create multipart upload", err}
		}
		id, have = nid, map[int32]serverPart{}
	}
	if id != o.UploadID {
		if err := setID(id); err != nil {
			return &opErr{"journal", err}
		}
	}
	parts := make([]serverPart, 0, len(sums.Parts))
	for i, crc := range sums.Parts {
		n := int32(i + 1)
		off := int64(i) * partSize
		size := min(partSize, res.Size-off)
		if p, ok := have[n]; ok && p.Size == size && p.CRC32C == crcB64(crc) {
			parts = append(parts, p)
			res.Resumed++
			continue
		}
		if o.Window != nil && !o.Window() {
			return &opErr{"wait", errWindowClosed}
		}
		etag, err := c.part(ctx, key, id, n, f, off, size, crc)
		if errors.Is(err, errNoUpload) {
			_ = setID("")
		}
		if err != nil {
			return &opErr{fmt.Sprintf("upload part %d of %d", n, len(sums.Parts)), err}
		}
		parts = append(parts, serverPart{Number: n, Size: size, ETag: etag, CRC32C: crcB64(crc)})
	}
	if err := c.complete(ctx, key, id, parts, sums.Whole); err != nil {
		if errors.Is(err, errNoUpload) {
			_ = setID("")
		}
		return &opErr{"complete multipart upload", err}
	}
	c.abortAll(ctx, key) // orphans of earlier attempts hold parts (storage) forever otherwise
	if err := setID(""); err != nil {
		return &opErr{"journal", err}
	}
	return nil
}
