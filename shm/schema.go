// The consumer's side of a version 2 segment's schema area: the declared
// type (message encoding, schema encoding, schema name, schema bytes) is
// read once, when the segment is opened, into the consumer's own memory.

package shm

import (
	"fmt"

	"github.com/edr-lite/edr-lite/ingest"
)

// TypeError says why a segment's declared type is not used: the topic is
// recorded all the same, as raw bytes named by its schema name. It is
// reported through ConsumerOptions.OnError and SegmentStats.TypeErr.
// (A type that reads but does not check out, such as a layout that does
// not compile, is refused by the recorder instead: engine.Config.CheckType.)
type TypeError struct {
	Segment string // file path
	Topic   string // name, or name#channel
	Err     error
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("shm: segment %s: topic %q: declared type not used, recorded as raw bytes: %v", e.Segment, e.Topic, e.Err)
}

// Unwrap returns the cause.
func (e *TypeError) Unwrap() error { return e.Err }

// readType returns the type the segment declares. A version 1 segment
// declares at most a type name (the zero message encoding: the recorder
// records raw bytes, or what its configuration says). A schema longer than
// MaxSchemaSize is not read: its topic is raw, with a *TypeError.
func (s *segment) readType() (ingest.Type, *TypeError) {
	h := &s.h
	t := ingest.Type{Schema: ingest.Schema{Name: h.typ}}
	if h.version < Version {
		return t, nil
	}
	if h.schemaLen > MaxSchemaSize {
		return ingest.Raw(h.typ), &TypeError{Segment: s.path, Topic: topicLabel(h.name, h.chn),
			Err: fmt.Errorf("%w: schema_len (offset %d) claims %d bytes of %q schema, limit %d (MaxSchemaSize): not read",
				ingest.ErrSchemaTooLarge, offSchemaLen, h.schemaLen, h.schemaEnc, MaxSchemaSize)}
	}
	t.MessageEncoding, t.Schema.Encoding = h.enc, h.schemaEnc
	if h.schemaLen > 0 {
		t.Schema.Data = make([]byte, h.schemaLen) // bounded above; the file holds it (total_size)
		if err := preadFull(s.fd, t.Schema.Data, HeaderSize); err != nil {
			return ingest.Raw(h.typ), &TypeError{Segment: s.path, Topic: topicLabel(h.name, h.chn),
				Err: fmt.Errorf("reading the schema area at offset %d: %w", HeaderSize, err)}
		}
	}
	return t, nil
}

func topicLabel(name, channel string) string {
	if channel == "" {
		return name
	}
	return name + "#" + channel
}
