package dumpfile

import (
	"fmt"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/media/foxglove"
)

// videoOrder finds the foxglove.CompressedVideo topics whose frames are
// not presented in the order they are decoded: a frame presented before
// one that came earlier in the stream (B-frames, read from the messages'
// presentation timestamps in the order the dump holds them, which is
// decode order). Foxglove's CompressedVideo does not support such
// streams (docs/media.md), so a write to MCAP warns of them. After the
// first message of each topic it does not allocate.
type videoOrder struct {
	typ    *ingest.Type // the last message's type, and whether it is video
	video  bool
	topics map[topicKey]*videoTopic
	found  []*videoTopic // in the order they were found
	v      foxglove.CompressedVideo
}

type videoTopic struct {
	name       string
	maxPTS     int64 // the latest presentation time so far
	seen       bool
	reordered  bool
	atNs       int64 // the message presented early: its time, and the presentation times
	ptsNs, max int64
}

func isVideoType(t *ingest.Type) bool {
	return t != nil && t.MessageEncoding == ingest.EncodingProtobuf && t.Schema.Name == foxglove.SchemaCompressedVideo
}

// add looks at one message (in the order the output gets them).
func (o *videoOrder) add(m *Message) {
	if m.Type != o.typ {
		o.typ, o.video = m.Type, isVideoType(m.Type)
	}
	if !o.video {
		return
	}
	vt := o.topics[topicKey{m.Name, m.Channel}]
	if vt == nil {
		if o.topics == nil {
			o.topics = map[topicKey]*videoTopic{}
		}
		vt = &videoTopic{name: (&SourceTopic{Name: m.Name, Channel: m.Channel}).String()}
		o.topics[topicKey{m.Name, m.Channel}] = vt
	}
	if vt.reordered || foxglove.DecodeCompressedVideo(m.Data, &o.v) != nil {
		return // a message that does not decode is another reader's error
	}
	pts := o.v.TimestampNs
	if vt.seen && pts < vt.maxPTS {
		vt.reordered, vt.atNs, vt.ptsNs, vt.max = true, m.TimeNs, pts, vt.maxPTS
		o.found = append(o.found, vt)
		return
	}
	vt.seen, vt.maxPTS = true, max(vt.maxPTS, pts)
}

// done reports whether every video topic seen so far has B-frames (and
// at least one was seen): reading further cannot find more.
func (o *videoOrder) done(videoTopics int) bool {
	return videoTopics > 0 && len(o.found) == videoTopics
}

// notes says, per topic with B-frames, what was found and what it means.
func (o *videoOrder) notes() []string {
	var out []string
	for _, vt := range o.found {
		out = append(out, fmt.Sprintf("%s: foxglove.CompressedVideo with B-frames (the message at %s is presented at %s, "+
			"before a frame that came earlier, presented at %s): Foxglove cannot play it, its CompressedVideo does not "+
			"support B-frames (re-encode without them, e.g. libx264 -bf 0; docs/media.md)",
			vt.name, fmtNs(vt.atNs), fmtNs(vt.ptsNs), fmtNs(vt.max)))
	}
	return out
}

func fmtNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// videoTopics counts the topics of srcs whose type is
// foxglove.CompressedVideo (protobuf).
func videoTopics(srcs ...*Source) int {
	n := 0
	for _, s := range srcs {
		for _, t := range s.Topics() {
			for _, ts := range t.Types {
				if isVideoType(&ts.Type) {
					n++
					break
				}
			}
		}
	}
	return n
}

// VideoReorders reads the foxglove.CompressedVideo topics of src (all of
// its messages, in time order, until every such topic is found to have
// B-frames) and says, one line per topic, which have B-frames and that
// Foxglove cannot play them. nil when src has no such topic or none has.
func VideoReorders(src *Source) ([]string, error) {
	n := videoTopics(src)
	if n == 0 {
		return nil, nil
	}
	var o videoOrder
	msgs := NewMessages(src)
	for !o.done(n) {
		ok, err := msgs.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		o.add(msgs.Message())
	}
	return o.notes(), nil
}
