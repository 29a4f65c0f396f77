package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/upload"
)

// TestUploadDefaultsAreUploads: default.toml's [upload] block parses to
// the defaults, which are package upload's constants.
func TestUploadDefaultsAreUploads(t *testing.T) {
	f, err := Parse("default.toml", []byte(Default()))
	if err != nil {
		t.Fatal(err)
	}
	want := uploadDefaults()
	want.ParquetSchema = map[string]string{}
	if !reflect.DeepEqual(f.Upload, want) {
		t.Fatalf("default.toml [upload] %+v, defaults %+v", f.Upload, want)
	}
	if _, _, ok, err := f.UploadOptions(); ok || err != nil {
		t.Errorf("uploads on by default: %v %v", ok, err)
	}
}

func TestUploadSection(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "vehicle.Speed.layout")
	os.WriteFile(layout, []byte("f32le speed (m/s)\n"), 0o644)
	bad := filepath.Join(dir, "bad.layout")
	os.WriteFile(bad, []byte("f33le speed\n"), 0o644)
	base := "[recorder]\ndump_dir = \"/tmp/d\"\n[upload]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b\"\naccess_key = \"a\"\nsecret_key = \"s\"\n"
	f, err := Parse("x.toml", []byte(base+"bandwidth = \"256KiB\"\nwindow = \"22:00-06:00\"\nparquet = true\nparquet_schema = { \"vehicle/speed\" = \""+layout+"\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, schemas, ok, err := f.UploadOptions()
	if !ok || err != nil || o.Bandwidth != 256<<10 || o.Dir != "/tmp/d" || o.PartSize != upload.DefaultPartSize ||
		schemas["vehicle/speed"].Schema.Name != "vehicle.Speed" {
		t.Fatalf("options %+v %v %v %v", o, schemas, ok, err)
	}
	for _, c := range []struct{ extra, want string }{
		{"window = \"soon\"\n", "upload.window"},
		{"part_size = \"1MiB\"\n", "upload.part_size"},
		{"key = \"{prefix}/{vehicle}\"\n", "upload.key"},
		{"parquet_schema = { \"t\" = \"" + bad + "\" }\n", "layout:1:1: unknown type f33le"},
		{"parquet_schema = { \"t\" = \"/nonexistent.layout\" }\n", "upload.parquet_schema"},
		{"colour = \"red\"\n", "upload.colour: unknown key"},
	} {
		_, err := Parse("x.toml", []byte(base+c.extra))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.toml") {
			t.Errorf("%q: %v, want an error naming %q", c.extra, err, c.want)
		}
	}
	if _, err := Parse("x.toml", []byte("[upload]\nbucket = \"b\"\n")); err == nil || !strings.Contains(err.Error(), "upload.endpoint is empty") {
		t.Errorf("bucket without endpoint: %v", err)
	}
}
