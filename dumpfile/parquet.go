package dumpfile

import (
	"fmt"
)

// FormatParquet is the --format of the Parquet tables (package table): a
// directory format (Format.Dir), written with ExportDir once
// internal/dumptable is linked.
const FormatParquet = "parquet"

// OutFile is one file of a directory export.
type OutFile struct {
	Table string
	Path  string
	Rows  int64
	Size  int64
}

// DirExportFunc writes a Source under a directory in a directory format.
type DirExportFunc func(src *Source, dir string, opts ExportOptions) (*ConvertReport, error)

var dirExports = map[string]DirExportFunc{}

// RegisterDirExport supplies the writer of a directory format of the table
// (Parquet: package internal/dumptable registers it in its init). The
// format's row is here; its writer is linked only by the programs that
// import it, so the C library and other readers of dumps do not carry a
// Parquet writer (and what it links). Called from init functions only.
func RegisterDirExport(format string, fn DirExportFunc) {
	if f := lookup(format); f == nil || f.exportDir == nil {
		panic("BUG: dumpfile: RegisterDirExport of " + format + ", not a directory format of the table")
	}
	dirExports[format] = fn
}

// exportParquet calls the registered Parquet writer.
func exportParquet(src *Source, dir string, opts ExportOptions) (*ConvertReport, error) {
	fn := dirExports[FormatParquet]
	if fn == nil {
		return nil, fmt.Errorf("dumpfile: the parquet writer is not linked into this program (import internal/dumptable)")
	}
	return fn(src, dir, opts)
}
