package pack

import (
	"encoding/json"
	"fmt"
)

// DumpInfoName is the metadata section name under which SetDumpInfo stores
// the DumpInfo, as JSON.
const DumpInfoName = "edr.dump_info"

// DumpInfo makes a dump self-describing: why it was written and what each
// topic contributed. It is stored as JSON in the metadata section named
// DumpInfoName (see FORMAT.md for the field names).
type DumpInfo struct {
	Triggers  []TriggerRecord   `json:"triggers,omitempty"`
	Topics    []TopicAccount    `json:"topics,omitempty"`
	Writer    string            `json:"writer,omitempty"`     // program and version that wrote the dump
	Host      string            `json:"host,omitempty"`       // machine name
	StartNs   int64             `json:"start_ns,omitempty"`   // start of the dumped window
	EndNs     int64             `json:"end_ns,omitempty"`     // end of the dumped window
	CreatedNs int64             `json:"created_ns,omitempty"` // when the dump was written
	Labels    map[string]string `json:"labels,omitempty"`     // free-form (vehicle id, build, ...)
}

// TriggerRecord is one trigger that caused (or joined) the dump.
type TriggerRecord struct {
	ID       uint64            `json:"id"`
	Reason   string            `json:"reason"`
	Source   string            `json:"source,omitempty"` // "lua", "api", "signal", ...
	Rule     string            `json:"rule,omitempty"`   // rule name when Source is a rule
	Tag      string            `json:"tag,omitempty"`
	Severity int               `json:"severity,omitempty"`
	TimeNs   int64             `json:"time_ns"`
	PreNs    int64             `json:"pre_ns"`
	PostNs   int64             `json:"post_ns"`
	Params   map[string]string `json:"params,omitempty"`
}

// TopicAccount is one topic's accounting for the dumped window.
type TopicAccount struct {
	Topic       string `json:"topic"`
	Type        string `json:"type,omitempty"`
	Messages    uint64 `json:"messages"`
	Bytes       uint64 `json:"bytes"`
	Overwritten uint64 `json:"overwritten,omitempty"`  // lost to ring overwrite while reading
	Oversize    uint64 `json:"oversize,omitempty"`     // dropped: larger than max_packet
	SkippedBusy uint64 `json:"skipped_busy,omitempty"` // dropped: ring busy
	// LostAtSource: lost before reaching the recorder (a shared-memory
	// producer overwrote them unread, the kernel dropped them).
	LostAtSource uint64 `json:"lost_at_source,omitempty"`
	FirstNs      int64  `json:"first_ns,omitempty"`
	LastNs       int64  `json:"last_ns,omitempty"`
}

// SetDumpInfo stores d (as JSON, metadata section DumpInfoName); a later
// call replaces it. It is written by Close.
func (w *Writer) SetDumpInfo(d DumpInfo) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("pack: dump info: %w", err)
	}
	return w.AddMetadata(DumpInfoName, b)
}

// DumpInfo returns the file's DumpInfo; ok is false when it has none or it
// does not decode.
func (r *Reader) DumpInfo() (d DumpInfo, ok bool) {
	b, ok := r.Metadata(DumpInfoName)
	if !ok {
		return DumpInfo{}, false
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return DumpInfo{}, false
	}
	return d, true
}
