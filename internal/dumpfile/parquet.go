package dumpfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/table"
)

// FormatParquet is the --format of the Parquet tables (package table): a
// directory format (Format.Dir), written with ExportDir.
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

// exportParquet writes src as Parquet tables under dir (table.Write).
func exportParquet(src *Source, dir string, opts ExportOptions) (*ConvertReport, error) {
	d := &table.Dump{File: filepath.Base(src.Path), Format: src.Format}
	d.ID = strings.TrimSuffix(d.File, filepath.Ext(d.File))
	if st, err := os.Stat(src.Path); err == nil {
		d.Size = st.Size()
	}
	d.Info, _ = src.DumpInfo()
	for _, t := range src.Topics() {
		d.Topics = append(d.Topics, table.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type, Messages: t.Messages})
	}
	var tm table.Message
	d.Walk = func(fn func(m *table.Message) error) error {
		return src.InFileOrder(func(m *Message) error {
			tm = table.Message{Name: m.Name, Channel: m.Channel, CaptureNs: m.TimeNs, ProducerNs: m.GenNs, Data: m.Data}
			return fn(&tm)
		})
	}
	rep, err := table.Write(d, dir, table.Options{Vehicle: opts.Vehicle, Types: src, Schemas: opts.Schemas})
	out := &ConvertReport{Topics: len(d.Topics), Written: 0}
	if rep != nil {
		out.Messages, out.Bytes, out.Notes = rep.Messages, rep.Bytes, rep.Skipped
		for _, f := range rep.Files {
			out.Files = append(out.Files, OutFile{Table: f.Table, Path: f.Path, Rows: f.Rows, Size: f.Size})
			out.Written += f.Size
		}
	}
	if err != nil {
		return out, fmt.Errorf("%s: %w", src.Path, err)
	}
	return out, nil
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
