package deptest

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const mod = "github.com/edr-lite/edr-lite/"

// rule: package pkg must not depend (directly or not) on any of forbidden.
// An entry ending in "/" forbids the whole tree; "net" forbids only the
// package net (net/netip is plain data).
type rule struct {
	pkg       string
	forbidden []string
	why       string
}

var (
	cmdOnly = []string{"github.com/BurntSushi/toml", "github.com/prometheus/", "github.com/schollz/progressbar/"}
	// heavy is what a dump format links: a source or producer program must
	// not pay for it.
	heavy = []string{mod + "pack", mod + "mcap", mod + "dump", mod + "engine", "github.com/klauspost/compress/",
		"github.com/pierrec/lz4/", "github.com/dgraph-io/ristretto/", "google.golang.org/protobuf/"}
	lua = "github.com/yuin/gopher-lua"
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

var rules = []rule{
	{mod + "ingest", []string{mod, "github.com/"}, "the source contract is a leaf: standard library only"},
	{mod + "dumpinfo", []string{mod, "github.com/"}, "the dump's self-description is plain data: standard library only"},
	{mod + "arena", join([]string{mod + "engine", lua, "net", mod + "pack"}, cmdOnly),
		"the arena knows nothing of topics, time, files, Lua or sockets"},
	{mod + "engine", join([]string{lua, "net", mod + "scripts", mod + "shm", mod + "capture", mod + "pack", mod + "mcap", mod + "dump",
		"github.com/klauspost/compress/", "github.com/pierrec/lz4/"}, cmdOnly),
		"the recorder keeps rings; it knows no Lua, sockets, sources, file formats or the dump pipeline"},
	{mod + "dump", join([]string{lua, "net", mod + "scripts", mod + "shm", mod + "capture", mod + "replay"}, cmdOnly),
		"the dump pipeline reads rings and writes files; no Lua, sockets or sources"},
	{mod + "pack", join([]string{mod + "engine", mod + "dump", lua, "net", mod + "scripts", mod + "capture", mod + "shm",
		"github.com/bufbuild/protocompile"}, cmdOnly), "pack is the file format only"},
	{mod + "mcap", join([]string{mod + "engine", mod + "dump", lua, "net"}, cmdOnly), "MCAP is a file format only"},
	{mod + "scripts", join([]string{"net", mod + "shm", mod + "capture", mod + "pack", mod + "mcap", mod + "dump"}, cmdOnly),
		"rules see messages and time, not sockets or files"},
	{mod + "shm", join([]string{mod + "scripts", lua, mod + "capture"}, heavy, cmdOnly),
		"shm feeds the recorder through the ingest contract only"},
	{mod + "capture", join([]string{mod + "scripts", lua, mod + "shm"}, heavy, cmdOnly),
		"capture feeds the recorder through the ingest contract only"},
	{mod + "internal/deptest/testdata/producer", join([]string{lua}, heavy, cmdOnly),
		"a producer program links shm and the standard library, not the recorder"},
	{mod + "replay", cmdOnly, "replay is a library; flags and output live in cmd"},
	{mod + "examples/brake-node", join([]string{lua}, heavy, cmdOnly),
		"an example node links shm and the standard library, like any producer program"},
	{mod + "jsonl", join([]string{mod + "engine", mod + "dump", lua, "net", mod + "internal/dumpfile", mod + "mcap"}, cmdOnly),
		"JSON lines is a file format only; internal/dumpfile decides when to use it"},
	{mod + "internal/kway", []string{mod}, "the merge heap is a leaf"},
	{mod + "internal/defaults", []string{mod, "github.com/"}, "the one table of defaults is a leaf: standard library only"},
	{mod + "internal/filter", join([]string{mod + "jsonl", mod + "replay", mod + "internal/dumpfile", lua}, heavy, cmdOnly),
		"the selection parser reads strings, not files: standard library and internal/units"},
	{mod + "media", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay"}, cmdOnly), "camera files are read and written as messages; no recorder, dump formats, Lua or sockets"},
	{mod + "schema", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay"}, cmdOnly), "schemas and decoders are about bytes of one message: no recorder, files, Lua or sockets"},
	{mod + "report", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay"}, cmdOnly), "the report analyses messages it is fed and writes pages: no recorder, Lua, sockets or sources"},
	{mod + "upload", join([]string{mod + "scripts", lua, mod + "shm", mod + "capture", mod + "replay",
		mod + "table", "github.com/parquet-go/"}, cmdOnly),
		"the upload queue moves finished files: no recorder, Lua or sources; Parquet comes in through a ConvertFunc"},
	{mod + "table", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay", mod + "internal/dumpfile", mod + "upload", "github.com/aws/"}, cmdOnly),
		"the tables are built from messages and their schemas: no recorder, dump formats, storage or Lua (parquet-go links net through google/uuid and brotli; it opens no socket)"},
	{mod + "internal/dumpfile", []string{mod + "table", mod + "internal/dumptable", "github.com/parquet-go/"},
		"the Parquet writer (and the typing of topics for it) is internal/dumptable's, so readers of dumps (the C library) do not link it"},
	{mod + "dump", []string{mod + "upload", "github.com/aws/", "github.com/parquet-go/"},
		"rotation asks a dump.Keeper what to spare; the pipeline knows no object storage"},
	{mod + "sdk/libedrpack", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay"}, cmdOnly), "the C library reads and writes dump files: no recorder, Lua, sockets or sources"},
}

var (
	listOnce sync.Once
	known    map[string]bool // every package in the module's build graph
	listErr  error
)

func goList(args ...string) ([]string, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, out)
	}
	return strings.Fields(string(out)), nil
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	d, err := goList("-deps", pkg)
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return d
}

func matches(dep, f string) bool {
	if f == "net" {
		return dep == "net"
	}
	if strings.HasSuffix(f, "/") {
		return strings.HasPrefix(dep, f)
	}
	return dep == f || strings.HasPrefix(dep, f+"/")
}

func TestRoomsStayApart(t *testing.T) {
	for _, r := range rules {
		for _, d := range deps(t, r.pkg) {
			if d == r.pkg {
				continue
			}
			for _, f := range r.forbidden {
				if matches(d, f) {
					t.Errorf("%s depends on %s: %s", r.pkg, d, r.why)
				}
			}
		}
	}
}

// TestNoStaleEntries keeps the rules honest (as tailscale's deptest does):
// every package a rule constrains exists, and every forbidden entry names
// something that exists in the module's build graph, so a renamed room or
// a dropped dependency cannot leave a rule that silently checks nothing.
func TestNoStaleEntries(t *testing.T) {
	listOnce.Do(func() {
		var all []string
		if all, listErr = goList("-deps", "-test", mod+"...", mod+"internal/deptest/testdata/producer"); listErr == nil {
			known = map[string]bool{}
			for _, p := range all {
				known[p] = true
			}
		}
	})
	if listErr != nil {
		t.Fatalf("go list: %v", listErr)
	}
	for _, r := range rules {
		if !known[r.pkg] {
			t.Errorf("rule for %s: no such package (renamed or removed?)", r.pkg)
		}
		for _, f := range r.forbidden {
			found := false
			for p := range known {
				if matches(p, f) || strings.HasPrefix(p, f) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("rule for %s forbids %q, which nothing in the module's build graph (tests included) is: stale entry", r.pkg, f)
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
