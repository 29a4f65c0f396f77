package dumptable

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/table"
)

func init() { dumpfile.RegisterDirExport(dumpfile.FormatParquet, Export) }

// Export writes src as Parquet tables under dir (table.Write), typed by
// the Source (dumpfile.Source.TopicType) and opts.Schemas.
func Export(src *dumpfile.Source, dir string, opts dumpfile.ExportOptions) (*dumpfile.ConvertReport, error) {
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
		return src.InFileOrder(func(m *dumpfile.Message) error {
			tm = table.Message{Name: m.Name, Channel: m.Channel, CaptureNs: m.TimeNs, ProducerNs: m.GenNs, Data: m.Data}
			return fn(&tm)
		})
	}
	rep, err := table.Write(d, dir, table.Options{Vehicle: opts.Vehicle, Types: src, Schemas: opts.Schemas, NoSync: opts.NoSync})
	out := &dumpfile.ConvertReport{Topics: len(d.Topics), Written: 0}
	if rep != nil {
		out.Messages, out.Bytes, out.Notes = rep.Messages, rep.Bytes, rep.Skipped
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
