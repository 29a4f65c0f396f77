//go:build ecu

// The ECU build (go build -tags ecu, docs/ecu.md) leaves out the HTML report
// pages, the Parquet conversion of uploads and the demo vehicle: these stand
// in for report.go (with report_ecu.go), upload_parquet.go and demo.go.

package daemon

import (
	"os"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

// ParquetConverter is never used: the ECU build refuses uploads
// (upload.ErrNotInBuild) before a converter is made.
func ParquetConverter(string, map[string]schema.Type, os.FileMode, *evidence.Keyring) upload.ConvertFunc {
	return func(string, string) ([]upload.Converted, error) { return nil, upload.ErrNotInBuild }
}

// SealInfo is never used: the ECU build refuses uploads, whose ledger
// records it (and it would link the Parquet tables, whose dumps table
// spells a signature the same way).
func SealInfo(string, *evidence.Keyring) *upload.SealInfo { return nil }
