package mcap

import "github.com/edr-lite/edr-lite/ingest"

// Schema is an MCAP Schema record: how to decode the messages of the
// channels that refer to it. ID 0 is reserved ("no schema").
type Schema struct {
	ID       uint16
	Name     string // e.g. "sensor_msgs/msg/Imu"
	Encoding string // schema format: "protobuf", "ros2msg", "jsonschema", ... "" = none
	Data     []byte // the schema itself, empty when Encoding is ""
}

// Channel is an MCAP Channel record: one stream of messages on a topic.
type Channel struct {
	ID              uint16
	SchemaID        uint16 // 0 = no schema
	Topic           string
	MessageEncoding string // "protobuf", "cdr", "json", ... or RawMessageEncoding
	Metadata        map[string]string
}

// Message is an MCAP Message record. Times are nanoseconds since the UNIX
// epoch in edr-lite files.
type Message struct {
	ChannelID   uint16
	Sequence    uint32
	LogTime     uint64 // when the message was recorded
	PublishTime uint64 // when it was published (set to LogTime when unknown)
	Data        []byte
}

// Attachment is an MCAP Attachment record: a file stored with the
// messages (a calibration, a map, a configuration). Times are nanoseconds
// since the UNIX epoch, 0 when unknown.
type Attachment struct {
	LogTime    uint64
	CreateTime uint64
	Name       string
	MediaType  string
	Data       []byte // from a Reader: aliases its bytes, valid until Close
	// Offset is the record's file offset (Reader; 0 for one to write).
	Offset int64
}

// Topic is how edr-lite describes a recorded stream to the writer; the
// writer turns it into a Schema (when there is type information) and a
// Channel. See (*Writer).AddTopic for the mapping.
type Topic struct {
	Name    string // message name, e.g. "vehicle/speed"
	Channel string // "" when the name has a single stream
	// Type is the topic's message encoding and schema (name, schema
	// encoding, bytes: a protobuf FileDescriptorSet as is, a JSON Schema,
	// ROS 2 definitions, a layout); the zero Type is opaque bytes
	// (RawMessageEncoding), its schema name, if any, still written.
	Type ingest.Type
	// Metadata is copied into the Channel's metadata (after the edr.* keys).
	Metadata map[string]string
}

// TopicName returns the MCAP topic of a name and channel: the pack
// convention "name#channel", or just name when channel is "".
func TopicName(name, channel string) string {
	if channel == "" {
		return name
	}
	return name + "#" + channel
}
