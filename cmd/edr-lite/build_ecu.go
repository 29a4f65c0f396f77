//go:build ecu

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

// buildName names this build in "edr-lite version" (docs/ecu.md): "ecu",
// or "ecu+http" when built with -tags ecu,http (the HTTP listener, the
// metrics and the live server put back).
var buildName = map[bool]string{false: "ecu", true: "ecu+http"}[daemon.HTTPBuilt]

// fullOnly are the verbs the ECU build leaves out (docs/ecu.md): each is
// registered all the same, and says which build has it.
var fullOnly = []struct{ name, what string }{
	{"upload", "upload dumps to S3-compatible object storage"},
	{"report", "HTML and JSON reports of dumps"},
	{"demo", "the simulated vehicle"},
}

func init() {
	for _, v := range fullOnly {
		register(&verb{name: v.name, summary: "(full build only) " + v.what, run: func(e *env) int {
			fmt.Fprintf(e.stderr, "edr-lite %s: not in this build of edr-lite (the ECU build): %s is in the full build (docs/ecu.md)\n", v.name, v.what)
			return exitUsage
		}})
	}
}

// printUploadStatus: the ECU build has no uploader, so status never holds
// an upload part.
func printUploadStatus(io.Writer, *upload.Status) {}

var parquetVehicleHelp = "parquet (full build only): the vehicle= partition"

// exportParquet: Parquet tables are in the full build.
func exportParquet(*dumpfile.Source, string, string, map[string]schema.Type, *evidence.Keyring) (*dumpfile.ConvertReport, error) {
	return nil, errors.New("--format parquet is not in this build of edr-lite (the ECU build): the full build has it (docs/ecu.md)")
}

// importCamera: camera files are in the full build (dumpfile.NotBuilt
// refuses --format jpeg-dir and mp4 before this is reached).
func importCamera(c *command, format, _, _, _, _, _, _, _ string, _ float64, _ string, _ bool) int {
	return c.fail(dumpfile.NotBuilt(format))
}

// warnSkippedIn: the ECU build opens no camera inputs (dumpfile refuses
// them), so there is nothing they leave out to name.
func (c *command) warnSkippedIn([]string) {}
