package main

import (
	"errors"

	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/upload"
)

func parquetConvert(vehicle string, schemas map[string]schema.Type) upload.ConvertFunc {
	return func(path, dir string) ([]upload.Converted, error) {
		return nil, errors.New("parquet conversion: not built yet")
	}
}
