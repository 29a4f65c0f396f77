package jsonl

import "encoding/json"

// The header's "format" and "version".
const (
	FormatName = "edr-lite-jsonl"
	Version    = 1
)

// Header is the first line of a JSON-lines export.
type Header struct {
	Format    string  `json:"format"`
	Version   int     `json:"version"`
	Writer    string  `json:"writer,omitempty"`     // the pack file's writer
	CreatedNs int64   `json:"created_ns,omitempty"` // the pack file's creation time
	Topics    []Topic `json:"topics"`
	// DumpInfo is the dump's information (triggers, per-topic accounting)
	// exactly as stored in the pack file.
	DumpInfo json.RawMessage `json:"dump_info,omitempty"`
	// Metadata holds the other metadata sections, base64.
	Metadata map[string][]byte `json:"metadata,omitempty"`
}

// Topic is one topic of the header. Messages name it by Topic: "name",
// or "name#channel" when there is a channel.
type Topic struct {
	Topic    string `json:"topic"`
	Name     string `json:"name"`
	Channel  string `json:"channel,omitempty"`
	Type     string `json:"type,omitempty"`
	Messages uint64 `json:"messages"`
}

// topicKey is a topic as messages carry it.
type topicKey struct{ name, channel string }

// Report says what an export or import carried.
type Report struct {
	Topics   int
	Messages uint64
	Bytes    uint64 // data bytes
}
