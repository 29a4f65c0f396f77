package fuzz

import (
	"errors"
	"reflect"
	"testing"

	"github.com/edr-lite/edr-lite/live"
)

// FuzzLiveRequest parses arbitrary bytes as a message a live client sends
// (live.ParseRequest: a JSON request or a binary message), as a hostile
// client on the WebSocket would. Properties: no panic; an error wraps
// ErrRequest and comes with the zero Request; a parsed request names an
// op, carries at most MaxRequestItems entries and names of at most
// MaxNameLen bytes; a binary message's payload lies within the input.
func FuzzLiveRequest(f *testing.F) {
	f.Add(true, []byte(`{"op":"subscribe","subscriptions":[{"id":0,"channelId":3},{"id":1,"channelId":5}]}`))
	f.Add(true, []byte(`{"op":"unsubscribe","subscriptionIds":[0,1]}`))
	f.Add(true, []byte(`{"op":"advertise","channels":[{"id":1,"topic":"operator/mark","encoding":"json","schemaName":"M","schema":"{}","schemaEncoding":"jsonschema"}]}`))
	f.Add(true, []byte(`{"op":"setParameters","parameters":[{"name":"edr-lite.history_s","value":5}],"id":"x"}`))
	f.Add(true, []byte(`{"op":"getParameters","parameterNames":[],"id":"r"}`))
	f.Add(true, []byte(`{"op":"subscribe","subscriptions":[{"id":-1,"channelId":1e40}]}`))
	f.Add(true, []byte(`{"op":`))
	f.Add(false, []byte{1, 1, 0, 0, 0, '{', '}'})
	f.Add(false, []byte{2, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0})
	f.Add(false, []byte{9})
	f.Fuzz(func(t *testing.T, text bool, data []byte) {
		r, err := live.ParseRequest(text, data)
		if err != nil {
			if !errors.Is(err, live.ErrRequest) {
				t.Fatalf("error %v does not wrap ErrRequest", err)
			}
			if !reflect.ValueOf(r).IsZero() {
				t.Fatalf("error with a partial request %+v", r)
			}
			return
		}
		if r.Op == "" {
			t.Fatal("a request without an op")
		}
		n := max(len(r.Subscriptions), len(r.IDs), len(r.Channels), len(r.Names), len(r.Params))
		if n > live.MaxRequestItems {
			t.Fatalf("%d entries", n)
		}
		for _, c := range r.Channels {
			if len(c.Topic) > live.MaxNameLen || c.Topic == "" || c.Encoding == "" {
				t.Fatalf("channel %+v", c)
			}
		}
		if len(r.Payload) > len(data) {
			t.Fatalf("payload of %d bytes from %d", len(r.Payload), len(data))
		}
	})
}
