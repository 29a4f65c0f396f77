package pack

import (
	"runtime/debug"

	"encoding/json"
	"fmt"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// SetDumpInfo stores d (as JSON, metadata section dumpinfo.MetadataName); a later
// call replaces it. It is written by Close.
func (w *Writer) SetDumpInfo(d dumpinfo.Info) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("pack: dump info: %w", err)
	}
	return w.AddMetadata(dumpinfo.MetadataName, b)
}

// DumpInfo returns the file's dump information; ok is false when it has none or it
// does not decode.
func (r *Reader) DumpInfo() (d dumpinfo.Info, ok bool) {
	var fault error
	defer zeroOnFault(&fault, &ok)
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	b, found := r.Metadata(dumpinfo.MetadataName)
	if !found {
		return dumpinfo.Info{}, false
	}
	d, err := dumpinfo.Decode(b)
	if err != nil {
		return dumpinfo.Info{}, false
	}
	return d, true
}
