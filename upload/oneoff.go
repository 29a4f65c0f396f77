package upload

import (
	"context"
	"path/filepath"
)

// Result is one file of a one-off upload.
type Result struct {
	File    string
	Key     string
	Size    int64
	CRC32C  string // base64, as the server reports it
	Already bool   // the server held it already: nothing was sent
	Parts   int    // parts of a multipart upload, 0 for one PUT
	Resumed int    // parts found on the server from an interrupted run
	Parquet []Result
}

// OneOff uploads dumps now, outside any queue (the upload verb): the same
// keys, checksums, confirmation and resumption as the Uploader (an
// interrupted multipart upload is found again by listing the server's
// uploads), the bandwidth cap, no journal and no schedule window. It stops
// at the first error.
type OneOff struct {
	o       Options
	key     *Template
	pkey    *Template
	c       *client
	convert ConvertFunc
}

// NewOneOff builds a one-off uploader; convert is needed when o.Parquet is
// set.
func NewOneOff(o Options, convert ConvertFunc) (*OneOff, error) {
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	if o.Parquet && convert == nil {
		return nil, optErr("parquet", "no converter")
	}
	x := &OneOff{o: o, c: newClient(&o), convert: convert}
	x.key, _ = ParseTemplate(o.Key)
	x.pkey, _ = ParseTemplate(o.ParquetKey)
	return x, nil
}

// Sent returns the bytes sent so far (for progress), the request in flight
// and resent bytes included: it only ever grows.
func (x *OneOff) Sent() int64 { return x.c.total.Load() }

// KeyOf returns the object key of the dump at path.
func (x *OneOff) KeyOf(path string) string {
	return x.key.Expand(KeyFields{Prefix: x.o.Prefix, Vehicle: x.o.Vehicle, Time: dumpTime(path), File: filepath.Base(path)})
}

// Upload uploads one dump (and its Parquet files when Options.Parquet);
// tmp is a directory for the conversion.
func (x *OneOff) Upload(ctx context.Context, path, tmp string) (Result, error) {
	key := x.KeyOf(path)
	r, err := x.c.sendFile(ctx, path, key, sendOpts{PartSize: x.o.PartSize})
	res := Result{File: path, Key: key, Size: r.Size, CRC32C: r.CRC32C, Already: r.Already, Parts: r.Parts, Resumed: r.Resumed}
	if err != nil || !x.o.Parquet {
		return res, err
	}
	files, err := x.convert(path, tmp)
	if err != nil {
		return res, &Error{File: path, Key: "-", Op: "convert to parquet", Err: err}
	}
	for _, f := range files {
		k := x.pkey.Expand(KeyFields{Prefix: x.o.Prefix, Vehicle: x.o.Vehicle, Time: dumpTime(path), File: filepath.Base(path), Table: f.Table})
		pr, err := x.c.sendFile(ctx, f.Path, k, sendOpts{PartSize: x.o.PartSize})
		res.Parquet = append(res.Parquet, Result{File: f.Path, Key: k, Size: pr.Size, CRC32C: pr.CRC32C, Already: pr.Already})
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
