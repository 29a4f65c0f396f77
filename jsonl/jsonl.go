package jsonl

import (
	"encoding/json"

	"github.com/edr-lite/edr-lite/ingest"
)

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
	// Types lists each distinct type of the dump's topics once (a topic
	// refers to its first by TypeID; a message line's "type_id" says its
	// topic's type changed there). Absent in exports of untyped dumps and
	// of versions before types; ignored by importers before them.
	Types []Type `json:"types,omitempty"`
	// DumpInfo is the dump's information (triggers, per-topic accounting)
	// exactly as stored in the pack file.
	DumpInfo json.RawMessage `json:"dump_info,omitempty"`
	// Metadata holds the other metadata sections, base64.
	Metadata map[string][]byte `json:"metadata,omitempty"`
	// Attachments are the files stored with the dump, in file order.
	// Ignored by importers before them.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is one file stored with the dump (pack.Attachment).
type Attachment struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
	LogNs     int64  `json:"log_ns,omitempty"`
	CreateNs  int64  `json:"create_ns,omitempty"`
	Data      []byte `json:"data"` // base64
}

// Topic is one topic of the header. Messages name it by Topic: "name",
// or "name#channel" when there is a channel.
type Topic struct {
	Topic    string `json:"topic"`
	Name     string `json:"name"`
	Channel  string `json:"channel,omitempty"`
	Type     string `json:"type,omitempty"`    // the schema (type) name, for readers of the text
	TypeID   string `json:"type_id,omitempty"` // the topic's first type, in Header.Types
	Messages uint64 `json:"messages"`
	// Types are the topic's types in the order they appear (Export fills
	// the header's table and TypeID from them; a message's Type says which
	// applies). Not written as such.
	Types []ingest.Type `json:"-"`
}

// Type is one entry of the header's type table: a topic type
// (ingest.Type) and its content ID (ingest.Type.ID, hex), which an
// importer checks.
type Type struct {
	ID             string `json:"id"`
	Encoding       string `json:"encoding"`
	SchemaName     string `json:"schema_name,omitempty"`
	SchemaEncoding string `json:"schema_encoding,omitempty"`
	Schema         []byte `json:"schema,omitempty"` // base64: protobuf descriptor sets are binary
}

func typeEntry(t ingest.Type) Type {
	return Type{ID: t.ID().String(), Encoding: t.MessageEncoding, SchemaName: t.Schema.Name,
		SchemaEncoding: t.Schema.Encoding, Schema: t.Schema.Data}
}

func (e *Type) typ() ingest.Type {
	return ingest.Type{MessageEncoding: e.Encoding,
		Schema: ingest.Schema{Name: e.SchemaName, Encoding: e.SchemaEncoding, Data: e.Schema}}
}

// topicKey is a topic as messages carry it.
type topicKey struct{ name, channel string }

// Report says what an export or import carried.
type Report struct {
	Topics   int
	Messages uint64
	Bytes    uint64 // data bytes
	// Notes say what Import left out (a warning each).
	Notes []string
}
