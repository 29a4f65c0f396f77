package dumpfile

import (
	"fmt"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/schema"
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

// TopicType returns the type a topic of the dump carries (table.Types): an
// MCAP channel's message encoding and schema when it has an encoding other
// than opaque bytes. A pack dump records no schema yet: false.
func (s *Source) TopicType(name, channel string) (schema.Type, bool) {
	if s.mp == nil {
		return schema.Type{}, false
	}
	for _, t := range s.mp.Topics() {
		if t.Name != name || t.Channel != channel || t.MCAP == nil {
			continue
		}
		ci := t.MCAP
		if ci.MessageEncoding == "" || ci.MessageEncoding == mcap.RawMessageEncoding {
			return schema.Type{}, false
		}
		typ := schema.Type{MessageEncoding: ci.MessageEncoding}
		if ci.Schema != nil {
			typ.Schema = schema.Schema{Name: ci.Schema.Name, Encoding: ci.Schema.Encoding, Data: ci.Schema.Data}
		}
		return typ, true
	}
	return schema.Type{}, false
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

// ParquetFiles converts the dump at path into Parquet tables under dir:
// what the upload queue sends beside a dump.
func ParquetFiles(path, dir string, opts ExportOptions) ([]OutFile, error) {
	src, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	rep, err := ExportDir(src, FormatParquet, dir, opts)
	if err != nil {
		return nil, err
	}
	return rep.Files, nil
}
