package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// rule: package pkg must not depend (directly or not) on any of forbidden;
// an entry ending in "/" forbids the whole tree.
type rule struct {
	pkg       string
	forbidden []string
	why       string
}

var cmdOnly = []string{"github.com/BurntSushi/toml", "github.com/prometheus/", "github.com/schollz/progressbar/"}

var rules = []rule{
	{"github.com/edr-lite/edr-lite/arena", append([]string{"github.com/edr-lite/edr-lite/engine", "github.com/yuin/gopher-lua", "net", "github.com/edr-lite/edr-lite/pack"}, cmdOnly...),
		"the arena knows nothing of topics, time, files, Lua or sockets"},
	{"github.com/edr-lite/edr-lite/engine", append([]string{"github.com/yuin/gopher-lua", "net", "github.com/edr-lite/edr-lite/scripts", "github.com/edr-lite/edr-lite/shm", "github.com/edr-lite/edr-lite/capture", "github.com/edr-lite/edr-lite/mcap"}, cmdOnly...),
		"the engine knows no Lua, sockets, sources or MCAP; it reaches pack through its writer interface"},
	{"github.com/edr-lite/edr-lite/pack", append([]string{"github.com/edr-lite/edr-lite/engine", "github.com/yuin/gopher-lua", "net"}, cmdOnly...),
		"pack is the file format only"},
	{"github.com/edr-lite/edr-lite/mcap", append([]string{"github.com/edr-lite/edr-lite/engine", "github.com/yuin/gopher-lua", "net"}, cmdOnly...),
		"MCAP is a file format only"},
	{"github.com/edr-lite/edr-lite/scripts", append([]string{"net", "github.com/edr-lite/edr-lite/shm", "github.com/edr-lite/edr-lite/capture", "github.com/edr-lite/edr-lite/mcap"}, cmdOnly...),
		"rules see messages and time, not sockets or files"},
	{"github.com/edr-lite/edr-lite/shm", append([]string{"github.com/edr-lite/edr-lite/scripts", "github.com/yuin/gopher-lua", "github.com/edr-lite/edr-lite/capture"}, cmdOnly...),
		"shm feeds the engine through the Sink contract only"},
	{"github.com/edr-lite/edr-lite/capture", append([]string{"github.com/edr-lite/edr-lite/scripts", "github.com/yuin/gopher-lua", "github.com/edr-lite/edr-lite/shm"}, cmdOnly...),
		"capture feeds the engine through the Sink contract only"},
	{"github.com/edr-lite/edr-lite/replay", cmdOnly, "replay is a library; flags and output live in cmd"},
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

func TestRoomsStayApart(t *testing.T) {
	for _, r := range rules {
		for _, d := range deps(t, r.pkg) {
			if d == r.pkg {
				continue
			}
			for _, f := range r.forbidden {
				bad := d == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(d, f)) || strings.HasPrefix(d, f+"/")
				if f == "net" {
					bad = d == "net" // net/netip is fine: it is plain data
				}
				if bad {
					t.Errorf("%s depends on %s: %s", r.pkg, d, r.why)
				}
			}
		}
	}
}

// TestTestutilOnlyInTests: internal/testutil (and with it goleak) is
// imported by _test.go files only, never linked into a program.
func TestTestutilOnlyInTests(t *testing.T) {
	const testutil = "github.com/edr-lite/edr-lite/internal/testutil"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/edr-lite/edr-lite/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == testutil {
				t.Errorf("%s imports %s outside its tests", f[0], testutil)
			}
		}
	}
}
