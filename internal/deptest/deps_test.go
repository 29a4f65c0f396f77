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
	{mod + "evidence", []string{mod, "github.com/", "net"}, "signing and chaining is a leaf the formats use: standard library only, without crypto/x509 (which links net: key files are evidence/keyfile's)"},
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
	{mod + "can", join([]string{mod + "scripts", lua, mod + "shm", mod + "capture", mod + "schema", mod + "dumpfile",
		mod + "replay", "net"}, heavy, cmdOnly),
		"a CAN source feeds the recorder through the ingest contract only: no recorder, dump formats, Lua or decoders of other encodings; no package net (dumpfile links it, and the readers of dumps, the C library and the report, link no network code)"},
	{mod + "internal/deptest/testdata/producer", join([]string{lua}, heavy, cmdOnly),
		"a producer program links shm and the standard library, not the recorder"},
	{mod + "replay", cmdOnly, "replay is a library; flags and output live in cmd"},
	{mod + "examples/brake-node", join([]string{lua}, heavy, cmdOnly),
		"an example node links shm and the standard library, like any producer program"},
	{mod + "jsonl", join([]string{mod + "engine", mod + "dump", lua, "net", mod + "dumpfile", mod + "mcap"}, cmdOnly),
		"JSON lines is a file format only; dumpfile decides when to use it"},
	{mod + "internal/kway", []string{mod}, "the merge heap is a leaf"},
	{mod + "internal/defaults", []string{mod, "github.com/"}, "the one table of defaults is a leaf: standard library only"},
	{mod + "internal/suggest", []string{mod, "github.com/"}, "did-you-mean is a leaf: standard library only"},
	{mod + "internal/filter", join([]string{mod + "jsonl", mod + "replay", mod + "dumpfile", lua}, heavy, cmdOnly),
		"the selection parser reads strings, not files: standard library and internal/units"},
	{mod + "media", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay"}, cmdOnly), "camera files are read and written as messages; no recorder, dump formats, Lua or sockets"},
	{mod + "media/foxglove", join([]string{mod + "media$", "image/", mod + "engine", mod + "dump", mod + "pack", mod + "mcap"}, cmdOnly),
		"the camera messages alone: no camera files (what dumpfile's B-frame check links in the ECU build), no dump formats"},
	{mod + "schema", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay"}, cmdOnly), "schemas and decoders are about bytes of one message: no recorder, files, Lua or sockets"},
	{mod + "report", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay"}, cmdOnly), "the report analyses messages it is fed and writes pages: no recorder, Lua, sockets or sources"},
	{mod + "upload", join([]string{mod + "scripts", lua, mod + "shm", mod + "capture", mod + "replay",
		mod + "table", "github.com/parquet-go/"}, cmdOnly),
		"the upload queue moves finished files: no recorder, Lua or sources; Parquet comes in through a ConvertFunc"},
	{mod + "table", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, mod + "shm", mod + "capture",
		mod + "pack", mod + "mcap", mod + "replay", mod + "dumpfile", mod + "upload", "github.com/aws/"}, cmdOnly),
		"the tables are built from messages and their schemas: no recorder, dump formats, storage or Lua (parquet-go links net through google/uuid and brotli; it opens no socket)"},
	{mod + "dumpfile", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay", mod + "report", mod + "upload", mod + "live", mod + "internal/daemon", mod + "internal/config"}, cmdOnly),
		"the public reader and writer of dump files: a program that imports it links no recorder, dump pipeline, Lua, sockets or sources"},
	{mod + "dumpfile", []string{mod + "table", mod + "internal/dumptable", "github.com/parquet-go/"},
		"the Parquet writer (and the typing of topics for it) is internal/dumptable's, so readers of dumps (the C library) do not link it"},
	{mod + "dump", []string{mod + "upload", "github.com/aws/", "github.com/parquet-go/"},
		"rotation asks a dump.Keeper what to spare; the pipeline knows no object storage"},
	{mod + "feedcheck", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay", mod + "pack", mod + "mcap", mod + "dumpfile"}, cmdOnly),
		"the comparison of outputs is about messages and their schemas: no recorder, files, Lua or sockets"},
	{mod + "step", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay"}, cmdOnly),
		"a Go node records and replays its step in process: no recorder, Lua, sockets or sources"},
	{mod + "live", join([]string{mod + "pack", mod + "mcap", mod + "dump", mod + "jsonl", mod + "dumpfile", mod + "scripts", lua,
		mod + "shm", mod + "capture", mod + "replay", mod + "report", mod + "upload", mod + "table"}, cmdOnly),
		"the live server reads rings and speaks WebSocket: no dump formats, no Lua, no sources (published messages go through an ingest.Sink)"},
	{mod + "sdk/libedrpack", join([]string{mod + "engine", mod + "dump", mod + "scripts", lua, "net", mod + "shm", mod + "capture",
		mod + "replay"}, cmdOnly), "the C library reads and writes dump files: no recorder, Lua, sockets or sources"},
}

// ecuLeavesOut is what the ECU build (go build -tags ecu ./cmd/edr-lite,
// docs/ecu.md) does not link: the S3 uploader, Parquet, the report, the
// demo, camera files (package media, image/jpeg), the kernel filter of
// raw capture (cilium/ebpf), and the whole HTTP stack (the HTTP listener,
// Prometheus, pprof, the live server) with net/http and crypto/tls. A change that brings one
// back (a library that imports net/http for a feature nobody calls is
// enough) fails TestECUBuildLeavesOut; -tags ecu,http puts the HTTP stack
// back on purpose.
var ecuLeavesOut = []string{"net/http", "crypto/tls", "crypto/x509", "github.com/prometheus/", "github.com/coder/websocket",
	mod + "live", "github.com/schollz/progressbar/", "github.com/aws/", "github.com/parquet-go/", mod + "report", mod + "table",
	mod + "internal/dumptable", mod + "internal/demo", "html/template", "text/template",
	mod + "media$", "image/jpeg", // camera files: media/foxglove (the messages, for the B-frame check) stays
	"github.com/cilium/ebpf"} // the kernel filter of raw capture

// TestECUBuildLeavesOut: the ECU build links none of ecuLeavesOut.
func TestECUBuildLeavesOut(t *testing.T) {
	d, err := goList("-deps", "-tags", "ecu", mod+"cmd/edr-lite")
	if err != nil {
		t.Fatalf("go list -deps -tags ecu: %v", err)
	}
	for _, p := range d {
		for _, f := range ecuLeavesOut {
			if matches(p, f) {
				t.Errorf("the ECU build (-tags ecu) links %s: it leaves out %s (docs/ecu.md)", p, f)
			}
		}
	}
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
	if p, ok := strings.CutSuffix(f, "$"); ok { // that package, not those under it
		return dep == p
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
	ecu := rule{pkg: mod + "cmd/edr-lite", forbidden: ecuLeavesOut}
	for _, r := range append(rules, ecu) {
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
