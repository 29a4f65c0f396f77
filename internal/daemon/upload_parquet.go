//go:build !ecu

package daemon

import (
	"os"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/dumptable"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

// ParquetConverter converts a dump into the Parquet tables the upload queue
// (and the upload verb) send beside it: dumpfile's parquet format,
// partitioned by vehicle, typed topics decoded with schemas where the dump
// carries no type, files given mode (0: 0644 less the umask; the
// recorder's queue gives the dumps' mode) and their directories the
// matching search bits.
func ParquetConverter(vehicle string, schemas map[string]schema.Type, mode os.FileMode, keys *evidence.Keyring) upload.ConvertFunc {
	return func(path, dir string) ([]upload.Converted, error) {
		files, err := dumptable.Files(path, dir, dumptable.Options{Vehicle: vehicle, Schemas: schemas, NoSync: true, FileMode: mode, Keys: keys})
		out := make([]upload.Converted, len(files))
		for i, f := range files {
			out[i] = upload.Converted{Table: f.Table, Path: f.Path}
		}
		return out, err
	}
}

// SealInfo is what the upload ledger records of the dump at path's
// signature, checked with keys (as the dumps table records it:
// dumptable.TableSeal).
func SealInfo(path string, keys *evidence.Keyring) *upload.SealInfo {
	v, err := dumpfile.CheckSeal(path, keys)
	if err != nil {
		return &upload.SealInfo{Status: "unreadable", Reason: err.Error()}
	}
	t := dumptable.TableSeal(v)
	return &upload.SealInfo{Status: t.Status, KeyID: t.KeyID, Reason: v.Reason, Chain: t.Chain, Counter: t.Counter, Seal: t.ID, Prev: t.Prev}
}
