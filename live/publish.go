package live

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// publishEncodings are the message encodings clients may publish in
// (serverInfo's supportedEncodings).
var publishEncodings = []string{ingest.EncodingJSON, ingest.EncodingProtobuf, ingest.EncodingCDR}

// publisher takes the messages clients publish into the recorder, through
// the ingest.Sink like any source: each topic is discovered with the type
// its channel was advertised with (MultiProducer: several clients may
// publish on it, all with that type) and goes offline when no client
// advertises it any more.
type publisher struct {
	o     *Publish
	count atomic.Uint64

	mu     sync.Mutex
	topics map[string]*pubTopic
}

type pubTopic struct {
	name  string
	id    ingest.TopicID
	typ   ingest.Type
	users int
}

// pubChannel is a channel a client advertised.
type pubChannel struct {
	t *pubTopic
}

func newPublisher(o *Publish) *publisher {
	return &publisher{o: o, topics: map[string]*pubTopic{}}
}

// typeOf is the recorded type of a client channel, as MCAP would name it:
// json with a JSON Schema or none, protobuf with a FileDescriptorSet (in
// base64 on the wire), ROS 2 CDR with its definitions.
func typeOf(ch ClientChannel) (ingest.Type, error) {
	t := ingest.Type{MessageEncoding: ch.Encoding, Schema: ingest.Schema{Name: ch.SchemaName, Encoding: ch.SchemaEncoding}}
	switch ch.Encoding {
	case ingest.EncodingJSON:
		if ch.Schema == "" {
			t.Schema.Encoding = ingest.SchemaNone
			break
		}
		if t.Schema.Encoding == "" {
			t.Schema.Encoding = ingest.SchemaJSON
		}
		t.Schema.Data = []byte(ch.Schema)
	case ingest.EncodingProtobuf:
		if t.Schema.Encoding == "" {
			t.Schema.Encoding = ingest.SchemaProtobuf
		}
		b, err := base64.StdEncoding.DecodeString(ch.Schema)
		if err != nil {
			return t, fmt.Errorf("protobuf schema is not base64 (a FileDescriptorSet): %v", err)
		}
		t.Schema.Data = b
	case ingest.EncodingCDR:
		if t.Schema.Encoding == "" {
			t.Schema.Encoding = ingest.SchemaROS2Msg
		}
		t.Schema.Data = []byte(ch.Schema)
	default:
		return t, fmt.Errorf("encoding %q: this server takes %s", ch.Encoding, strings.Join(publishEncodings, ", "))
	}
	if err := schema.Check(t); err != nil {
		return t, err
	}
	return t, nil
}

// allowed reports whether clients may publish on topic.
func (p *publisher) allowed(topic string) bool {
	for _, g := range p.o.Topics {
		if ok, _ := path.Match(g, topic); ok {
			return true
		}
	}
	return false
}

// advertise registers a client's channels; each refused one is answered
// with an error naming it.
func (p *publisher) advertise(c *client, chs []ClientChannel) {
	for _, ch := range chs {
		if _, dup := c.pubChans[ch.ID]; dup {
			c.protoErr("advertise: channel id %d is in use (unadvertise it first)", ch.ID)
			continue
		}
		if len(c.pubChans) >= p.o.MaxChannels {
			c.protoErr("advertise %s refused: %d channels per client is the limit", ch.Topic, p.o.MaxChannels)
			continue
		}
		if !p.allowed(ch.Topic) {
			c.protoErr("advertise %s refused: clients may publish on %s only (live.publish_topics)", ch.Topic, strings.Join(p.o.Topics, ", "))
			continue
		}
		typ, err := typeOf(ch)
		if err != nil {
			c.protoErr("advertise %s refused: %v", ch.Topic, err)
			continue
		}
		t, err := p.acquire(ch.Topic, typ)
		if err != nil {
			c.protoErr("advertise %s refused: %v", ch.Topic, err)
			continue
		}
		c.pubChans[ch.ID] = &pubChannel{t: t}
	}
}

// acquire makes topic ready to take messages of type typ.
func (p *publisher) acquire(topic string, typ ingest.Type) (*pubTopic, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.topics[topic]
	if t != nil && t.users > 0 {
		if !t.typ.Equal(typ) {
			return nil, fmt.Errorf("another client publishes it as %s", t.typ)
		}
		t.users++
		return t, nil
	}
	id, err := p.o.Sink.Discover(ingest.TopicInfo{Name: topic, Source: "live", Type: typ, MultiProducer: true})
	if err != nil {
		return nil, err
	}
	t = &pubTopic{name: topic, id: id, typ: typ, users: 1}
	p.topics[topic] = t
	return t, nil
}

// release lets go of a channel's topic; the last one puts it offline.
func (p *publisher) release(t *pubTopic) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.users--
	if t.users == 0 {
		p.o.Sink.Offline(t.id)
	}
}

func (p *publisher) unadvertise(c *client, ids []uint32) {
	for _, id := range ids {
		ch := c.pubChans[id]
		if ch == nil {
			c.protoErr("unadvertise: no channel %d", id)
			continue
		}
		delete(c.pubChans, id)
		p.release(ch.t)
	}
}

// releaseAll releases the channels of a client that went.
func (p *publisher) releaseAll(c *client) {
	for id, ch := range c.pubChans {
		delete(c.pubChans, id)
		p.release(ch.t)
	}
}

// message records one published message.
func (p *publisher) message(c *client, chID uint32, data []byte) {
	ch := c.pubChans[chID]
	if ch == nil {
		c.protoErr("message on channel %d, which you did not advertise", chID)
		return
	}
	now := p.o.Sink.Now()
	if !p.o.Sink.IngestAt(ch.t.id, now, 0, data) {
		c.protoErr("message on %s not recorded (larger than the topic's max_packet, or the topic is not recorded now)", ch.t.name)
		return
	}
	p.count.Add(1)
	c.published.Add(1)
	if p.o.OnMessage != nil {
		p.o.OnMessage(ch.t.name, now, data)
	}
}
