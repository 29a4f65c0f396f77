package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Subprotocol is the WebSocket subprotocol the server speaks: the Foxglove
// WebSocket protocol, version 1 (docs/live.md).
const Subprotocol = "foxglove.websocket.v1"

// Capabilities the server may declare in serverInfo.
const (
	CapClientPublish = "clientPublish"
	CapTime          = "time"
	CapParameters    = "parameters"
)

// Binary opcodes, server to client and client to server.
const (
	opMessageData   = 0x01 // server: subscription id, timestamp, payload
	opTime          = 0x02 // server: timestamp
	opClientMessage = 0x01 // client: channel id, payload
	opServiceCall   = 0x02 // client: a service call (no services here)
)

// Status levels of the status message.
const (
	LevelInfo    = 0
	LevelWarning = 1
	LevelError   = 2
)

// ParamHistory is the parameter a client sets (setParameters) to ask for
// the last N seconds the rings hold with each subscription it makes next:
// a number of seconds, float64, 0 for none.
const ParamHistory = "edr-lite.history_s"

// Limits of one client request, whatever the read limit lets in.
const (
	// MaxRequestItems bounds the subscriptions, ids, channels or parameters
	// one request may carry; a longer list is refused whole.
	MaxRequestItems = 4096
	// MaxNameLen bounds a topic, encoding, schema name or parameter name a
	// client sends.
	MaxNameLen = 1024
)

// ErrRequest is wrapped by every error ParseRequest returns.
var ErrRequest = errors.New("live: bad request")

// Request is one message a client sent, parsed (ParseRequest). Op names
// it; only the fields of that op are set.
type Request struct {
	// Op is the JSON op ("subscribe", "unsubscribe", "advertise",
	// "unadvertise", "getParameters", "setParameters", or another name the
	// server answers with an error), or "message" for the binary client
	// message data, "serviceCall" for the binary service call request.
	Op string
	// Subscriptions of "subscribe".
	Subscriptions []Subscription
	// IDs of "unsubscribe" (subscription ids) and "unadvertise" (client
	// channel ids).
	IDs []uint32
	// Channels of "advertise" (client publishing).
	Channels []ClientChannel
	// Names of "getParameters" (empty: all).
	Names []string
	// Params of "setParameters".
	Params []Param
	// RequestID is the optional id of getParameters / setParameters.
	RequestID string
	// ChannelID and Payload of the binary client message ("message").
	ChannelID uint32
	Payload   []byte
}

// Subscription is one entry of a subscribe request.
type Subscription struct {
	ID        uint32
	ChannelID uint32
}

// ClientChannel is a channel a client advertises to publish on.
type ClientChannel struct {
	ID             uint32
	Topic          string
	Encoding       string
	SchemaName     string
	Schema         string
	SchemaEncoding string
}

// Param is a parameter of setParameters: its name and its value as a
// number (other JSON values are refused).
type Param struct {
	Name  string
	Value float64
	Unset bool // no value: the parameter goes back to its default
}

// wire forms of the JSON requests
type (
	wireRequest struct {
		Op              string            `json:"op"`
		Subscriptions   []wireSub         `json:"subscriptions"`
		SubscriptionIDs []uint32          `json:"subscriptionIds"`
		Channels        []wireChannel     `json:"channels"`
		ChannelIDs      []uint32          `json:"channelIds"`
		ParameterNames  []string          `json:"parameterNames"`
		Parameters      []json.RawMessage `json:"parameters"`
		ID              json.RawMessage   `json:"id"`
	}
	wireSub struct {
		ID        *uint32 `json:"id"`
		ChannelID *uint32 `json:"channelId"`
	}
	wireChannel struct {
		ID             *uint32 `json:"id"`
		Topic          string  `json:"topic"`
		Encoding       string  `json:"encoding"`
		SchemaName     string  `json:"schemaName"`
		Schema         *string `json:"schema"`
		SchemaEncoding *string `json:"schemaEncoding"`
	}
	wireParam struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
		Type  string          `json:"type"`
	}
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRequest, fmt.Sprintf(format, args...))
}

// ParseRequest parses one WebSocket message a client sent: a JSON object
// with an "op" when text is true, else a binary message starting with its
// opcode. It never panics and keeps nothing of b but the binary payload,
// which aliases b. On error (wrapping ErrRequest, saying what is wrong in
// words a client author knows) the Request is the zero value.
func ParseRequest(text bool, b []byte) (Request, error) {
	if !text {
		return parseBinary(b)
	}
	r, err := parseText(b)
	if err != nil {
		return Request{}, err
	}
	return r, nil
}

func parseBinary(b []byte) (Request, error) {
	if len(b) == 0 {
		return Request{}, badRequest("empty binary message")
	}
	switch b[0] {
	case opClientMessage:
		if len(b) < 5 {
			return Request{}, badRequest("client message data of %d bytes: want at least 5 (opcode, channel id)", len(b))
		}
		return Request{Op: "message", ChannelID: binary.LittleEndian.Uint32(b[1:5]), Payload: b[5:]}, nil
	case opServiceCall:
		return Request{Op: "serviceCall"}, nil
	}
	return Request{}, badRequest("unknown binary opcode 0x%02x (want 0x01, client message data)", b[0])
}

func parseText(b []byte) (Request, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Request{}, badRequest("not a JSON object")
	}
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return Request{}, badRequest("malformed JSON: %v", jsonErr(err))
	}
	if dec.More() {
		return Request{}, badRequest("malformed JSON: data after the object")
	}
	if w.Op == "" {
		return Request{}, badRequest(`no "op" field`)
	}
	if len(w.Op) > MaxNameLen {
		return Request{}, badRequest("op of %d bytes", len(w.Op))
	}
	r := Request{Op: w.Op}
	if n := max(len(w.Subscriptions), len(w.SubscriptionIDs), len(w.Channels), len(w.ChannelIDs),
		len(w.ParameterNames), len(w.Parameters)); n > MaxRequestItems {
		return Request{}, badRequest("%s with %d entries: at most %d per request", w.Op, n, MaxRequestItems)
	}
	switch w.Op {
	case "subscribe":
		if w.Subscriptions == nil {
			return Request{}, badRequest(`subscribe without "subscriptions"`)
		}
		r.Subscriptions = make([]Subscription, len(w.Subscriptions))
		for i, s := range w.Subscriptions {
			if s.ID == nil || s.ChannelID == nil {
				return Request{}, badRequest(`subscriptions[%d]: want "id" and "channelId"`, i)
			}
			r.Subscriptions[i] = Subscription{ID: *s.ID, ChannelID: *s.ChannelID}
		}
	case "unsubscribe":
		if w.SubscriptionIDs == nil {
			return Request{}, badRequest(`unsubscribe without "subscriptionIds"`)
		}
		r.IDs = w.SubscriptionIDs
	case "advertise":
		if w.Channels == nil {
			return Request{}, badRequest(`advertise without "channels"`)
		}
		r.Channels = make([]ClientChannel, len(w.Channels))
		for i, c := range w.Channels {
			if c.ID == nil {
				return Request{}, badRequest(`channels[%d]: no "id"`, i)
			}
			if c.Topic == "" || c.Encoding == "" {
				return Request{}, badRequest(`channels[%d]: want "topic" and "encoding"`, i)
			}
			if len(c.Topic) > MaxNameLen || len(c.Encoding) > MaxNameLen || len(c.SchemaName) > MaxNameLen {
				return Request{}, badRequest("channels[%d]: topic, encoding or schema name longer than %d bytes", i, MaxNameLen)
			}
			ch := ClientChannel{ID: *c.ID, Topic: c.Topic, Encoding: c.Encoding, SchemaName: c.SchemaName}
			if c.Schema != nil {
				ch.Schema = *c.Schema
			}
			if c.SchemaEncoding != nil {
				ch.SchemaEncoding = *c.SchemaEncoding
			}
			r.Channels[i] = ch
		}
	case "unadvertise":
		if w.ChannelIDs == nil {
			return Request{}, badRequest(`unadvertise without "channelIds"`)
		}
		r.IDs = w.ChannelIDs
	case "getParameters", "setParameters":
		id, err := requestID(w.ID)
		if err != nil {
			return Request{}, err
		}
		r.RequestID = id
		for _, n := range w.ParameterNames {
			if len(n) > MaxNameLen {
				return Request{}, badRequest("parameter name of %d bytes", len(n))
			}
		}
		r.Names = w.ParameterNames
		if w.Op == "setParameters" {
			if w.Parameters == nil {
				return Request{}, badRequest(`setParameters without "parameters"`)
			}
			r.Params = make([]Param, len(w.Parameters))
			for i, raw := range w.Parameters {
				p, err := parseParam(raw)
				if err != nil {
					return Request{}, badRequest("parameters[%d]: %v", i, err)
				}
				r.Params[i] = p
			}
		}
	}
	return r, nil
}

// requestID reads the optional string id of a parameter request.
func requestID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest(`"id" is not a string`)
	}
	if len(s) > MaxNameLen {
		return "", badRequest(`"id" of %d bytes`, len(s))
	}
	return s, nil
}

func parseParam(raw json.RawMessage) (Param, error) {
	var w wireParam
	if err := json.Unmarshal(raw, &w); err != nil {
		return Param{}, errors.New("not an object with name and value")
	}
	if w.Name == "" || len(w.Name) > MaxNameLen {
		return Param{}, errors.New("want a name of 1 to 1024 bytes")
	}
	p := Param{Name: w.Name}
	if len(w.Value) == 0 || string(w.Value) == "null" {
		p.Unset = true
		return p, nil
	}
	if err := json.Unmarshal(w.Value, &p.Value); err != nil || math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		return Param{}, fmt.Errorf("parameter %q: value %.40s is not a number", w.Name, w.Value)
	}
	return p, nil
}

// jsonErr shortens encoding/json's errors: their Go type names mean
// nothing to a client author.
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "a different type"
		switch te.Type.Kind().String() {
		case "uint32":
			want = "an integer from 0 to 4294967295"
		case "string":
			want = "a string"
		case "slice":
			want = "an array"
		case "struct", "ptr":
			want = "an object"
		}
		f := te.Field
		if f == "" {
			f = "value"
		}
		return fmt.Sprintf("%s: got %s, want %s", f, te.Value, want)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "invalid character "))
	}
	return err.Error()
}

// Server → client messages.

// appendMessageData appends a Message Data frame: opcode, subscription id,
// timestamp (ns), payload.
func appendMessageData(dst []byte, sub uint32, ns int64, payload []byte) []byte {
	dst = append(dst, opMessageData)
	dst = binary.LittleEndian.AppendUint32(dst, sub)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(max(ns, 0)))
	return append(dst, payload...)
}

// appendTime appends a Time frame.
func appendTime(dst []byte, ns int64) []byte {
	dst = append(dst, opTime)
	return binary.LittleEndian.AppendUint64(dst, uint64(max(ns, 0)))
}

type serverInfoMsg struct {
	Op                 string            `json:"op"`
	Name               string            `json:"name"`
	Capabilities       []string          `json:"capabilities"`
	SupportedEncodings []string          `json:"supportedEncodings,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	SessionID          string            `json:"sessionId,omitempty"`
}

type channelMsg struct {
	ID             uint32 `json:"id"`
	Topic          string `json:"topic"`
	Encoding       string `json:"encoding"`
	SchemaName     string `json:"schemaName"`
	Schema         string `json:"schema"`
	SchemaEncoding string `json:"schemaEncoding,omitempty"`
}

type advertiseMsg struct {
	Op       string       `json:"op"`
	Channels []channelMsg `json:"channels"`
}

type unadvertiseMsg struct {
	Op         string   `json:"op"`
	ChannelIDs []uint32 `json:"channelIds"`
}

type statusMsg struct {
	Op      string `json:"op"`
	Level   int    `json:"level"`
	Message string `json:"message"`
	ID      string `json:"id,omitempty"`
}

type paramValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Type  string  `json:"type,omitempty"`
}

type paramValuesMsg struct {
	Op         string       `json:"op"`
	Parameters []paramValue `json:"parameters"`
	ID         string       `json:"id,omitempty"`
}

// mustJSON marshals a server message (of the types above: it cannot fail).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("BUG: live: marshalling a server message: " + err.Error())
	}
	return b
}
