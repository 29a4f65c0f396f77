package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

// Upload is the [upload] section: finalized dumps go to S3-compatible
// object storage through the durable queue of package upload. Off while
// Endpoint is "".
type Upload struct {
	Endpoint          string            `toml:"endpoint"`
	Region            string            `toml:"region"`
	Bucket            string            `toml:"bucket"`
	AccessKey         string            `toml:"access_key"`
	SecretKey         string            `toml:"secret_key"`
	PathStyle         bool              `toml:"path_style"`
	Prefix            string            `toml:"prefix"`
	Vehicle           string            `toml:"vehicle"`
	Key               string            `toml:"key"`
	ParquetKey        string            `toml:"parquet_key"`
	PartSize          Size              `toml:"part_size"`
	Bandwidth         Size              `toml:"bandwidth"` // bytes per second
	Window            string            `toml:"window"`
	RetryMin          Duration          `toml:"retry_min"`
	RetryMax          Duration          `toml:"retry_max"`
	StallTimeout      Duration          `toml:"stall_timeout"`
	DeleteAfterUpload bool              `toml:"delete_after_upload"`
	Parquet           bool              `toml:"parquet"`
	ParquetSchema     map[string]string `toml:"parquet_schema"` // topic = layout file
}

// uploadDefaults are the [upload] defaults: package upload's constants.
func uploadDefaults() Upload {
	return Upload{Region: upload.DefaultRegion, PathStyle: true, Prefix: "edr", Key: upload.DefaultKey,
		ParquetKey: upload.DefaultParquetKey, PartSize: upload.DefaultPartSize,
		RetryMin: Duration(upload.DefaultRetryMin), RetryMax: Duration(upload.DefaultRetryMax),
		StallTimeout: Duration(upload.DefaultStall)}
}

// UploadOptions maps [upload] onto upload.Options, resolved (credentials
// from the environment when the file has none, the host name as the
// vehicle) and validated, with the Parquet layouts read and parsed.
// "config check" and the recorder call it alike. ok is false when uploads
// are off (no endpoint).
func (f *File) UploadOptions() (o upload.Options, schemas map[string]schema.Type, ok bool, err error) {
	u := f.Upload
	if u.Endpoint == "" {
		if u.Bucket != "" || u.Parquet || u.DeleteAfterUpload {
			return o, nil, false, fmt.Errorf("upload.endpoint is empty: uploads are off, yet other [upload] keys are set")
		}
		return o, nil, false, nil
	}
	o = upload.Options{Endpoint: u.Endpoint, Region: u.Region, Bucket: u.Bucket, AccessKey: u.AccessKey, SecretKey: u.SecretKey,
		PathStyle: u.PathStyle, Prefix: u.Prefix, Vehicle: u.Vehicle, Key: u.Key, ParquetKey: u.ParquetKey,
		PartSize: int64(u.PartSize), Bandwidth: int64(u.Bandwidth), Window: u.Window, RetryMin: u.RetryMin.D(),
		RetryMax: u.RetryMax.D(), Stall: u.StallTimeout.D(), DeleteAfterUpload: u.DeleteAfterUpload, Parquet: u.Parquet,
		ParquetSchemas: u.ParquetSchema, Dir: f.Recorder.DumpDir}
	if o, err = o.Resolve(); err != nil {
		return o, nil, false, err
	}
	schemas, err = LayoutSchemas(u.ParquetSchema, nil)
	if err != nil {
		return o, nil, false, fmt.Errorf("upload.parquet_schema: %w", err)
	}
	return o, schemas, true, nil
}

// LayoutSchemas reads and parses layout files (x-edr-layout) named by topic;
// names gives each topic's type name (the file's base name without its
// extension when absent). The upload section and "export --schema" share it.
func LayoutSchemas(files map[string]string, names map[string]string) (map[string]schema.Type, error) {
	if len(files) == 0 {
		return nil, nil
	}
	topics := make([]string, 0, len(files))
	for t := range files {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	out := map[string]schema.Type{}
	for _, topic := range topics {
		file := files[topic]
		st, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", topic, err)
		}
		if st.Size() > schema.MaxSchemaSize {
			return nil, fmt.Errorf("%s: %s is %d bytes, more than a schema may be (%d)", topic, file, st.Size(), schema.MaxSchemaSize)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", topic, err)
		}
		if _, err := schema.ParseLayout(b); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", topic, file, err)
		}
		name := names[topic]
		if name == "" {
			name = layoutName(file)
		}
		out[topic] = schema.Type{MessageEncoding: schema.EncodingPacked,
			Schema: schema.Schema{Name: name, Encoding: schema.SchemaLayout, Data: b}}
	}
	return out, nil
}

// layoutName is a layout file's base name without its extension.
func layoutName(file string) string {
	base := filepath.Base(file)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
