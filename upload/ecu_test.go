//go:build ecu

package upload

import (
	"errors"
	"strings"
	"testing"
)

// TestECURefusesUploads: the ECU build has no S3 client, so every upload is
// refused where the options are resolved ("config check" and "run" alike,
// which name the key, upload.endpoint), saying which build uploads.
func TestECURefusesUploads(t *testing.T) {
	_, err := Options{Endpoint: "https://s3.example.com", Bucket: "b", Dir: t.TempDir()}.Resolve()
	if !errors.Is(err, ErrNotInBuild) || !strings.Contains(err.Error(), "not in this build of edr-lite (the ECU build") ||
		!strings.Contains(err.Error(), "full build") {
		t.Fatalf("Resolve: %v, want the ECU build's refusal", err)
	}
	if _, err := New(Options{Endpoint: "https://s3.example.com", Bucket: "b", Dir: t.TempDir()}, nil); err == nil {
		t.Fatal("New made an uploader in the ECU build")
	}
}
