package daemon

import (
	"github.com/edr-lite/edr-lite/internal/dumptable"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

// ParquetConverter converts a dump into the Parquet tables the upload queue
// (and the upload verb) send beside it: internal/dumpfile's parquet format,
// partitioned by vehicle, typed topics decoded with schemas where the dump
// carries no type.
func ParquetConverter(vehicle string, schemas map[string]schema.Type) upload.ConvertFunc {
	return func(path, dir string) ([]upload.Converted, error) {
		files, err := dumptable.Files(path, dir, dumptable.Options{Vehicle: vehicle, Schemas: schemas, NoSync: true})
		out := make([]upload.Converted, len(files))
		for i, f := range files {
			out[i] = upload.Converted{Table: f.Table, Path: f.Path}
		}
		return out, err
	}
}
