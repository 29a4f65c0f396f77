//go:build cgo && linux

package main

import "github.com/edr-lite/edr-lite/pack"

// mapFile maps the file at path read-only (pack.MapFile): its bytes are not
// Go memory, so they can be handed to C in place.
func mapFile(path string) ([]byte, func() error, error) { return pack.MapFile(path) }
