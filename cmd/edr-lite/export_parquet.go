//go:build !ecu

package main

import (
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/dumptable"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/table"
)

// Parquet export ("export --format parquet"): in the full build only.

var parquetVehicleHelp = "parquet: the vehicle= partition (default: the dump's host, else " + table.DefaultVehicle + ")"

func exportParquet(src *dumpfile.Source, dir, vehicle string, schemas map[string]schema.Type, keys *evidence.Keyring) (*dumpfile.ConvertReport, error) {
	return dumptable.Export(src, dir, dumptable.Options{Vehicle: vehicle, Schemas: schemas, Keys: keys})
}
