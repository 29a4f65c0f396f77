package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/schema"
)

// demoSchemas are the --schema overrides of the pack demo dump.
func demoSchemas() map[string]schema.Type {
	return map[string]schema.Type{
		demodump.Speed:  demodump.Type(demodump.Speed),
		demodump.Brake:  demodump.Type(demodump.Brake),
		demodump.IMU:    demodump.Type(demodump.IMU),
		demodump.Camera: demodump.Type(demodump.Camera),
	}
}

func writeDemo(t *testing.T, format string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "demo."+format)
	write := demodump.WritePack
	if format == "mcap" {
		write = demodump.WriteMCAP
	}
	if err := write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRenderDemoScratch(t *testing.T) {
	p := writeDemo(t, "pack")
	r, err := FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: demoSchemas()}, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("REPORT_OUT"); out != "" {
		os.WriteFile(out, b.Bytes(), 0o644)
	}
	t.Logf("%d bytes, notes %v", b.Len(), r.Notes)
}
