//go:build !ecu

package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckPassesTheDemo: the demo's configuration passes the check (the
// demo is in the full build only).
func TestCheckPassesTheDemo(t *testing.T) {
	dir := t.TempDir()
	demo := DemoConfig(filepath.Join(dir, "demo"), filepath.Join(dir, "shm"))
	if err := Check(demo); err != nil {
		t.Errorf("the demo configuration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "demo")); err == nil {
		t.Error("Check created the dump directory: it must have no side effects")
	}
}
