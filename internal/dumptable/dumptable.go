package dumptable

import (
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/table"
)

func init() {
	dumpfile.RegisterDirExport(dumpfile.FormatParquet, func(src *dumpfile.Source, dir string, o dumpfile.ExportOptions) (*dumpfile.ConvertReport, error) {
		return Export(src, dir, Options{Vehicle: o.Vehicle})
	})
}

// Options configure Export.
type Options struct {
	// Vehicle is the vehicle= partition (table.DefaultVehicle when "").
	Vehicle string
	// Schemas type topics by name over what the dump says (export
	// --schema TOPIC=LAYOUTFILE, upload.parquet_schema).
	Schemas map[string]schema.Type
	// NoSync: the files are not fsynced (the upload queue's, thrown away
	// after their upload).
	NoSync bool
	// FileMode of the files (table.Options.FileMode).
	FileMode os.FileMode
	// Keys check the dump's signature for the dumps table's signature
	// columns (none: a seal's digest is checked, its signature "not
	// checked").
	Keys *evidence.Keyring
}

// Export writes src as Parquet tables under dir (table.Write), its topics
// typed by opts.Schemas, else by what the dump records (Types).
func Export(src *dumpfile.Source, dir string, opts Options) (*dumpfile.ConvertReport, error) {
	d := &table.Dump{File: filepath.Base(src.Path), Format: src.Format}
	d.ID = strings.TrimSuffix(d.File, filepath.Ext(d.File))
	if st, err := os.Stat(src.Path); err == nil {
		d.Size = st.Size()
	}
	d.Info, _ = src.DumpInfo()
	if v, err := dumpfile.CheckSeal(src.Path, opts.Keys); err == nil {
		d.Seal = TableSeal(v)
	}
	for _, t := range src.Topics() {
		d.Topics = append(d.Topics, table.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type.Schema.Name, Messages: t.Messages})
	}
	var tm table.Message
	d.Walk = func(fn func(m *table.Message) error) error {
		return src.InFileOrder(func(m *dumpfile.Message) error {
			tm = table.Message{Name: m.Name, Channel: m.Channel, CaptureNs: m.TimeNs, ProducerNs: m.GenNs, Data: m.Data}
			return fn(&tm)
		})
	}
	rep, err := table.Write(d, dir, table.Options{Vehicle: opts.Vehicle, Types: Types(src), Schemas: opts.Schemas, NoSync: opts.NoSync, FileMode: opts.FileMode})
	out := &dumpfile.ConvertReport{Topics: len(d.Topics), Written: 0}
	if rep != nil {
		out.Messages, out.Bytes = rep.Messages, rep.Bytes
		out.Notes = append(append(out.Notes, rep.Skipped...), rep.Renamed...)
		for _, f := range rep.Files {
			out.Files = append(out.Files, dumpfile.OutFile{Table: f.Table, Path: f.Path, Rows: f.Rows, Size: f.Size})
			out.Written += f.Size
		}
	}
	if err != nil {
		return out, fmt.Errorf("%s: %w", src.Path, err)
	}
	return out, nil
}

// Types returns what src records of its topics' types (table.Types): the
// message encoding and schema of a topic that is not opaque bytes, from a
// pack dump's type sections or an MCAP file's channels alike.
func Types(src *dumpfile.Source) table.Types { return sourceTypes{src} }

type sourceTypes struct{ src *dumpfile.Source }

func (s sourceTypes) TopicType(name, channel string) (schema.Type, bool) {
	for _, t := range s.src.Topics() {
		if t.Name != name || t.Channel != channel {
			continue
		}
		if t.Type.MessageEncoding == "" || t.Type.MessageEncoding == ingest.EncodingRaw {
			return schema.Type{}, false
		}
		return t.Type, true
	}
	return schema.Type{}, false
}

// Files converts the dump at path into Parquet tables under dir: what the
// upload queue sends beside a dump.
func Files(path, dir string, opts Options) ([]dumpfile.OutFile, error) {
	src, err := dumpfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	rep, err := Export(src, dir, opts)
	if err != nil {
		return nil, err
	}
	return rep.Files, nil
}

// TableSeal is a verdict as the dumps table records it.
func TableSeal(v evidence.Verdict) *table.Seal {
	t := &table.Seal{Status: v.Status.String()}
	if s := v.Seal; s != nil {
		t.KeyID, t.ID = s.Key.String(), s.ID().String()
		if !s.Link.Chain.IsZero() {
			t.Chain, t.Counter = s.Link.Chain.String(), s.Link.Counter
			if !s.Link.Prev.IsZero() {
				t.Prev = s.Link.Prev.String()
			}
		}
	}
	return t
}
