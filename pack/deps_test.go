package pack

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyBoundary keeps Lua, sockets, the engine and cmd-only
// libraries out of the pack room (and so out of every offline reader).
func TestDependencyBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/edr-lite/edr-lite/pack").Output()
	if err != nil {
		t.Skipf("needs the go tool: %v", err)
	}
	forbidden := []string{"github.com/yuin/gopher-lua", "net", "github.com/edr-lite/edr-lite/engine", "github.com/edr-lite/edr-lite/scripts",
		"github.com/edr-lite/edr-lite/capture", "github.com/edr-lite/edr-lite/shm", "github.com/schollz/progressbar/v3", "github.com/bufbuild/protocompile"}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	for _, f := range forbidden {
		if deps[f] {
			t.Errorf("github.com/edr-lite/edr-lite/pack depends on %s", f)
		}
	}
}
