package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&verb{name: "version", summary: "print the build: module version, VCS revision and time, Go version", run: runVersion})
}

// buildInfo is what version prints, from the binary's build information
// (runtime/debug.ReadBuildInfo: the go command stamps the module version
// and, building from a git checkout, the revision, its time and whether
// the tree had local changes).
type buildInfo struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Build is "full" (every verb), "ecu" (go build -tags ecu: the
	// verbs an ECU runs, docs/ecu.md) or "ecu+http" (the ECU build with
	// the HTTP listener, the metrics and the live server: -tags ecu,http).
	Build string `json:"build"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Module: "github.com/edr-lite/edr-lite", Version: "unknown", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Build: buildName}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.Main.Path != "" {
		b.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "GOARM":
			b.Platform += "/v" + s.Value
		}
	}
	return b
}

func runVersion(e *env) int {
	c := newCommand(e, "version", "edr-lite version [--json] | edr-lite --version",
		`Print what this binary was built from: the module version (a release tag,
or a pseudo-version of the commit, "(devel)" when built outside version
control), the VCS revision and its commit time (and "modified" when the tree
had local changes), the Go version and the platform, and the build: "full", or "ecu" for the
ECU build, which leaves some verbs and the HTTP stack out ("ecu+http" with the HTTP stack put
back; docs/ecu.md). Put it in bug reports.`,
		"edr-lite --version\nedr-lite version --json | jq -r .revision", 0, 0)
	asJSON := c.fs.Bool("json", false, "print one JSON object")
	if _, code, ok := c.parse(); !ok {
		return code
	}
	b := readBuildInfo()
	if *asJSON {
		out, _ := json.Marshal(b)
		fmt.Fprintf(e.stdout, "%s\n", out)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "edr-lite %s\n", b.Version)
	if b.Revision != "" {
		mod := ""
		if b.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(e.stdout, "  revision: %s%s\n", b.Revision, mod)
	}
	if b.Time != "" {
		fmt.Fprintf(e.stdout, "  time:     %s\n", b.Time)
	}
	fmt.Fprintf(e.stdout, "  go:       %s %s\n", b.Go, b.Platform)
	fmt.Fprintf(e.stdout, "  module:   %s\n", b.Module)
	fmt.Fprintf(e.stdout, "  build:    %s\n", b.Build)
	return exitOK
}
