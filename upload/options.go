package upload

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dump"
)

// Defaults of Options. Each is written here once; the configuration file
// (internal/config) and the upload verb take them from here.
const (
	DefaultRegion      = "us-east-1"
	DefaultKey         = "{prefix}/vehicle={vehicle}/date={date}/{file}"
	DefaultParquetKey  = "{prefix}/parquet/{table}/vehicle={vehicle}/date={date}/{name}.parquet"
	DefaultPartSize    = 8 << 20
	MinPartSize        = 5 << 20 // S3's smallest part but the last
	MaxParts           = 10000   // S3's most parts of one upload
	DefaultRetryMin    = time.Second
	DefaultRetryMax    = 5 * time.Minute
	DefaultStall       = 2 * time.Minute
	DefaultRescan      = time.Minute
	DefaultVehicleName = "unknown"
)

// Options configure an Uploader (and the one-off upload of the upload verb).
type Options struct {
	// Endpoint is the S3-compatible server's URL, "https://s3.eu-west-1.amazonaws.com"
	// or "http://127.0.0.1:7070". Required.
	Endpoint string
	// Region signs the requests (DefaultRegion when "").
	Region string
	// Bucket receives the objects. Required; it must exist.
	Bucket string
	// AccessKey and SecretKey are static credentials. When both are ""
	// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)
	// are read from the environment by Resolve.
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses buckets as ENDPOINT/BUCKET/KEY rather than
	// BUCKET.ENDPOINT/KEY (most S3-compatible servers want it).
	PathStyle bool
	// Prefix is {prefix} in the key templates.
	Prefix string
	// Vehicle is {vehicle} in the key templates (Resolve: the host name
	// when "").
	Vehicle string
	// Key is the object key template of a dump (DefaultKey when "");
	// see Template for the fields.
	Key string
	// ParquetKey is the key template of the Parquet files converted from a
	// dump (DefaultParquetKey when ""); {table} and {name} name the file.
	ParquetKey string
	// PartSize is the size of the parts of a multipart upload
	// (DefaultPartSize when 0, at least MinPartSize); a dump no larger is
	// sent in one PUT.
	PartSize int64
	// Bandwidth caps the bytes sent per second (0 = no cap).
	Bandwidth int64
	// Window is when uploads may run, "HH:MM-HH:MM" in local time, several
	// separated by commas ("" = always); see ParseWindow.
	Window string
	// RetryMin and RetryMax bound the exponential back-off between
	// attempts (DefaultRetryMin, DefaultRetryMax when 0).
	RetryMin, RetryMax time.Duration
	// Stall aborts a request that sent or received nothing for this long
	// (DefaultStall when 0); the upload is retried and resumes.
	Stall time.Duration
	// DeleteAfterUpload deletes a local dump once the server confirmed it
	// (its size and CRC32C).
	DeleteAfterUpload bool
	// BeforeDelete, when set, is told of a dump DeleteAfterUpload is about
	// to delete, before it does (the recorder's chain records it, so the
	// dump shows as removed on purpose, not deleted).
	BeforeDelete func(path string)
	// Seal, when set, says what the ledger records of an uploaded dump's
	// signature (read once the server confirmed the dump); nil: nothing.
	Seal func(path string) *SealInfo
	// Parquet converts each dump to Parquet (package table) and uploads the
	// files beside it.
	Parquet bool
	// ParquetSchemas maps topic names to layout files (x-edr-layout) for
	// the topics whose dumps carry no type yet.
	ParquetSchemas map[string]string
	// Dir is the dump directory; the queue's journal and ledger live in
	// it. Required by New (not by the one-off Upload).
	Dir string
	// FileMode is the mode of every file the queue writes beside the dumps
	// (journal, ledger, the Parquet files waiting for their upload), its
	// directories getting the matching search bits: the dumps' (the
	// recorder's dump_mode). 0 is dump.DefaultFileMode (0640).
	FileMode os.FileMode
	// Rescan is how often the dump directory is scanned for dumps the
	// queue missed (DefaultRescan when 0).
	Rescan time.Duration
	// Logger receives operational logs (slog.Default() when nil).
	Logger *slog.Logger
	// Now is the clock of the schedule window and the back-off (time.Now
	// when nil).
	Now func() time.Time
}

// Resolve fills the defaults (credentials from the environment, the host
// name as the vehicle) and validates o. The configuration check and the
// recorder call it alike.
func (o Options) Resolve() (Options, error) {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.Key == "" {
		o.Key = DefaultKey
	}
	if o.ParquetKey == "" {
		o.ParquetKey = DefaultParquetKey
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.RetryMin == 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax == 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.Stall == 0 {
		o.Stall = DefaultStall
	}
	if o.Rescan == 0 {
		o.Rescan = DefaultRescan
	}
	if o.FileMode == 0 {
		o.FileMode = dump.DefaultFileMode
	}
	if o.AccessKey == "" && o.SecretKey == "" {
		o.AccessKey, o.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if o.SessionToken == "" {
			o.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
		}
	}
	if o.Vehicle == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			o.Vehicle = h
		} else {
			o.Vehicle = DefaultVehicleName
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, o.validate()
}

func (o *Options) validate() error {
	if !s3Built {
		return ErrNotInBuild // the configuration names the key (upload.endpoint)
	}
	if o.Endpoint == "" {
		return optErr("endpoint", "required (the S3 server's URL, e.g. https://s3.eu-west-1.amazonaws.com)")
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return optErr("endpoint", "%q: want http://HOST[:PORT] or https://HOST[:PORT]", o.Endpoint)
	}
	if o.Bucket == "" {
		return optErr("bucket", "required")
	}
	if strings.ContainsAny(o.Bucket, "/ ") {
		return optErr("bucket", "%q: a bucket name has no '/' or space", o.Bucket)
	}
	if (o.AccessKey == "") != (o.SecretKey == "") {
		return optErr("access_key", "set both access_key and secret_key (or neither, to read AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	if o.AccessKey == "" {
		return optErr("access_key", "no credentials: set access_key and secret_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if _, err := ParseTemplate(o.Key); err != nil {
		return optErr("key", "%v", err)
	}
	pt, err := ParseTemplate(o.ParquetKey)
	if err != nil {
		return optErr("parquet_key", "%v", err)
	}
	if o.Parquet && !pt.Has("table") {
		return optErr("parquet_key", "%q: needs {table} (one file per table)", o.ParquetKey)
	}
	if o.PartSize < MinPartSize {
		return optErr("part_size", "%d: want at least %d (5MiB, S3's smallest part)", o.PartSize, MinPartSize)
	}
	if o.Bandwidth < 0 {
		return optErr("bandwidth", "%d: want >= 0 (0 = no cap)", o.Bandwidth)
	}
	if o.Bandwidth > 0 && o.Bandwidth < 1024 {
		return optErr("bandwidth", "%d bytes/s: want at least 1KiB/s (or 0 for no cap)", o.Bandwidth)
	}
	if _, err := ParseWindow(o.Window); err != nil {
		return optErr("window", "%v", err)
	}
	if o.RetryMin < 0 || o.RetryMax < o.RetryMin {
		return optErr("retry_max", "want 0 <= retry_min <= retry_max, got %v and %v", o.RetryMin, o.RetryMax)
	}
	if o.Stall < 0 || o.Rescan < 0 {
		return optErr("stall", "durations must be >= 0")
	}
	for topic, file := range o.ParquetSchemas {
		if topic == "" || file == "" {
			return optErr("parquet_schema", "want topic = \"layout file\", got %q = %q", topic, file)
		}
	}
	return nil
}

// OptionError reports an invalid option, named as the configuration
// file's [upload] key.
type OptionError struct {
	Key    string
	Reason string
}

func (e *OptionError) Error() string { return fmt.Sprintf("upload.%s: %s", e.Key, e.Reason) }

// Unwrap makes every OptionError match ErrOptions.
func (e *OptionError) Unwrap() error { return ErrOptions }

func optErr(key, format string, args ...any) error {
	return &OptionError{Key: key, Reason: fmt.Sprintf(format, args...)}
}
