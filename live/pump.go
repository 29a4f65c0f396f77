package live

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/schema"
)

// The pump is the server's one goroutine that reads the rings: one
// engine.Reader per subscribed topic (its own cursor: the writer is never
// locked or waited for), plus one per subscription that still delivers its
// history. Every request that changes subscriptions is handled here, between
// two reads, so history and live messages meet without a gap or a duplicate
// (ARCHITECTURE.md, "Rings"; docs/live.md).

// maxPerCycle bounds the messages read of one topic (or one subscription's
// history) per poll, so one busy topic cannot starve the others.
const maxPerCycle = 4096

// request kinds (client → pump)
const (
	reqJoin = iota
	reqLeave
	reqSubscribe
	reqUnsubscribe
)

type request struct {
	kind int
	c    *client
	subs []Subscription
	ids  []uint32
}

// ptopic is a recorded topic as the pump serves it.
type ptopic struct {
	id     ingest.TopicID
	name   string
	typ    ingest.Type    // as recorded
	ch     channelMsg     // as advertised
	layout *schema.Layout // transcoding packed structs to JSON, or nil
	rd     *engine.Reader // shared by the topic's live subscriptions; nil without subscriptions
	next   uint64         // the seq rd returns next, when nextKnown
	known  bool
	lost   uint64 // rd.Lost() already counted
	subs   []*sub
}

// sub is one subscription.
type sub struct {
	id     uint32
	pc     *pclient
	pt     *ptopic
	cnt    *topicCounts
	cu     *engine.Reader // history still to deliver; nil once live
	cuLost uint64
	pend   *item // a history message waiting for room in the queue
	last   uint64
	has    bool // last is set: messages up to it were delivered (or counted)
}

// pclient is a client as the pump sees it.
type pclient struct {
	c    *client
	subs map[uint32]*sub
	byPT map[*ptopic]*sub
}

type chanKey struct {
	name string
	id   ingest.ContentID
}

type pump struct {
	s        *Server
	rec      *engine.Recorder
	topics   map[ingest.TopicID]*ptopic
	order    []*ptopic // in id order
	byChan   map[uint32]*ptopic
	chanIDs  map[chanKey]uint32 // a topic keeps its channel id for a type
	nextChan uint32
	clients  map[*client]*pclient
	start    time.Time
	lastPoll time.Time
	lastTime time.Time
	lastTell time.Time
	msg      engine.Message
}

func newPump(s *Server) *pump {
	return &pump{s: s, rec: s.rec, topics: map[ingest.TopicID]*ptopic{}, byChan: map[uint32]*ptopic{},
		chanIDs: map[chanKey]uint32{}, nextChan: 1, clients: map[*client]*pclient{}, start: time.Now()}
}

// mono is the pump's monotonic clock in ns, never 0.
func (p *pump) mono() int64 { return int64(time.Since(p.start)) + 1 }

func (p *pump) run() {
	t := time.NewTicker(p.s.opts.Poll)
	defer t.Stop()
	defer p.shutdown()
	p.refresh()
	for {
		select {
		case <-p.s.done:
			return
		case r := <-p.s.reqs:
			p.handle(r)
		case <-t.C:
			p.cycle()
		}
	}
}

// shutdown releases every reader.
func (p *pump) shutdown() {
	for _, pc := range p.clients {
		p.leave(pc)
	}
	for _, pt := range p.order {
		if pt.rd != nil {
			pt.rd.Close()
			pt.rd = nil
		}
	}
}

func (p *pump) handle(r request) {
	if r.kind == reqJoin {
		pc := &pclient{c: r.c, subs: map[uint32]*sub{}, byPT: map[*ptopic]*sub{}}
		p.clients[r.c] = pc
		chs := make([]channelMsg, 0, len(p.order))
		for _, pt := range p.order {
			chs = append(chs, pt.ch)
		}
		r.c.text(mustJSON(advertiseMsg{Op: "advertise", Channels: chs}))
		return
	}
	pc := p.clients[r.c]
	if pc == nil {
		return // kicked out already
	}
	switch r.kind {
	case reqLeave:
		p.leave(pc)
	case reqSubscribe:
		for _, s := range r.subs {
			p.subscribe(pc, s)
		}
		pc.c.nsubs.Store(int64(len(pc.subs)))
	case reqUnsubscribe:
		for _, id := range r.ids {
			sb := pc.subs[id]
			if sb == nil {
				pc.c.protoErr("unsubscribe: no subscription %d", id)
				continue
			}
			p.unsubscribe(sb)
		}
		pc.c.nsubs.Store(int64(len(pc.subs)))
	}
}

func (p *pump) subscribe(pc *pclient, s Subscription) {
	c := pc.c
	if len(pc.subs) >= c.s.opts.MaxSubscriptions {
		c.statusMsg(LevelError, "", "subscription %d to channel %d refused: %d subscriptions is the limit (live.max_subscriptions)",
			s.ID, s.ChannelID, c.s.opts.MaxSubscriptions)
		return
	}
	if _, dup := pc.subs[s.ID]; dup {
		c.protoErr("subscribe: subscription id %d is in use", s.ID)
		return
	}
	pt := p.byChan[s.ChannelID]
	if pt == nil {
		c.protoErr("subscribe: no channel %d (it was never advertised, or was unadvertised)", s.ChannelID)
		return
	}
	if old := pc.byPT[pt]; old != nil {
		c.protoErr("subscribe: channel %d (%s) is already subscribed as subscription %d", s.ChannelID, pt.name, old.id)
		return
	}
	if pt.rd == nil {
		rd, err := p.rec.NewReader(pt.id)
		if err != nil {
			c.statusMsg(LevelError, "", "subscribe: topic %s cannot be read: %v", pt.name, err)
			return
		}
		rd.SeekNewest()
		pt.rd, pt.known, pt.lost = rd, false, rd.Lost()
	}
	sb := &sub{id: s.ID, pc: pc, pt: pt, cnt: c.counts(pt.name)}
	if h := time.Duration(c.history.Load()); h > 0 {
		cu, err := p.rec.NewReader(pt.id)
		if err == nil {
			cu.SeekTime(p.rec.Now() - int64(h))
			sb.cu, sb.cuLost = cu, cu.Lost()
		}
	}
	pt.subs = append(pt.subs, sb)
	pc.subs[s.ID] = sb
	pc.byPT[pt] = sb
	if sb.cu != nil {
		p.catchUp(sb) // the history starts going out now
	}
}

// unsubscribe ends sb, releasing its readers.
func (p *pump) unsubscribe(sb *sub) {
	pt, pc := sb.pt, sb.pc
	delete(pc.subs, sb.id)
	delete(pc.byPT, pt)
	if sb.cu != nil {
		sb.cu.Close()
		sb.cu = nil
	}
	for i, x := range pt.subs {
		if x == sb {
			pt.subs = append(pt.subs[:i], pt.subs[i+1:]...)
			break
		}
	}
	if len(pt.subs) == 0 && pt.rd != nil {
		pt.rd.Close()
		pt.rd = nil
	}
}

// leave forgets a client.
func (p *pump) leave(pc *pclient) {
	for _, sb := range pc.subs {
		p.unsubscribe(sb)
	}
	pc.c.nsubs.Store(0)
	delete(p.clients, pc.c)
}

// kick disconnects a client and forgets it.
func (p *pump) kick(pc *pclient, reason string, code websocket.StatusCode, text string) {
	pc.c.disconnect(reason, code, text)
	p.leave(pc)
}

// cycle is one poll: topics (every TopicPoll), messages, time, losses
// told, stalled clients.
func (p *pump) cycle() {
	now := time.Now()
	if now.Sub(p.lastPoll) >= p.s.opts.TopicPoll {
		p.refresh()
	}
	for _, pt := range p.order {
		if len(pt.subs) > 0 {
			p.serve(pt)
		}
	}
	mono := p.mono()
	if now.Sub(p.lastTime) >= timeInterval {
		p.lastTime = now
		it := item{kind: kTime, ns: p.rec.Now()}
		for c := range p.clients {
			c.q.offer(it, 0) // a time that does not fit is not missed
		}
	}
	if now.Sub(p.lastTell) >= tellInterval {
		p.lastTell = now
		for _, pc := range p.clients {
			p.tell(pc)
		}
	}
	stall := int64(p.s.opts.StallTimeout)
	for _, pc := range p.clients {
		if _, full := pc.c.q.state(); full != 0 && mono-full > stall {
			p.kick(pc, ReasonStalled, websocket.StatusPolicyViolation, fmt.Sprintf("too slow: your queue of %s stayed full for %s",
				units.FormatSize(p.s.opts.Queue), units.FormatDuration(p.s.opts.StallTimeout)))
		}
	}
}

// tell sends a client a status per topic it lost messages of since it was
// last told (the totals since it connected).
func (p *pump) tell(pc *pclient) {
	c := pc.c
	c.mu.Lock()
	ts := make([]*topicCounts, 0, len(c.topics))
	for _, t := range c.topics {
		ts = append(ts, t)
	}
	c.mu.Unlock()
	for _, t := range ts {
		d, l, u := t.dropped.Load(), t.lost.Load(), t.untranscodable.Load()
		if n := d + l + u; n != t.told {
			t.told = n
			c.statusMsg(LevelWarning, "edr-lite.lost:"+t.topic,
				"%s: %d messages not sent to you since you connected: %d dropped (your queue of %s was full), %d overwritten in the ring before they were read, %d not transcodable",
				t.topic, n, d, units.FormatSize(p.s.opts.Queue), l, u)
		}
	}
}

// serve delivers the history of subscriptions still catching up, then the
// topic's new messages to its live subscriptions.
func (p *pump) serve(pt *ptopic) {
	for _, sb := range pt.subs {
		if sb.cu != nil {
			p.catchUp(sb)
		}
	}
	if pt.rd == nil {
		return
	}
	mono := p.mono()
	for range maxPerCycle {
		if !pt.rd.ReadInto(&p.msg) {
			break
		}
		m := &p.msg
		pt.next, pt.known = m.Seq+1, true
		var payload []byte
		ok := true
		for _, sb := range pt.subs {
			if sb.cu != nil || sb.has && m.Seq <= sb.last {
				continue
			}
			if payload == nil && ok {
				if !sb.pc.c.q.fits(len(m.Data), mono) {
					sb.cnt.dropped.Add(1) // no copy for a client that cannot take it
					continue
				}
				payload, ok = encode(pt, m.Data)
			}
			if !ok {
				sb.cnt.untranscodable.Add(1)
				continue
			}
			if !sb.pc.c.q.offer(item{kind: kData, sub: sb.id, ns: m.CaptureNs, data: payload, cnt: sb.cnt}, mono) {
				sb.cnt.dropped.Add(1)
			}
		}
	}
	if l := pt.rd.Lost(); l > pt.lost {
		for _, sb := range pt.subs {
			if sb.cu == nil {
				sb.cnt.lost.Add(l - pt.lost)
			}
		}
		pt.lost = l
	}
}

// catchUp delivers sb's history as far as its client's queue takes it,
// and makes sb live once it reached the topic's live reader: messages
// before that come from sb's own reader, those after from the shared one,
// none twice.
func (p *pump) catchUp(sb *sub) {
	pt, q := sb.pt, sb.pc.c.q
	mono := p.mono()
	defer func() {
		if sb.cu != nil {
			if l := sb.cu.Lost(); l > sb.cuLost {
				sb.cnt.lost.Add(l - sb.cuLost)
				sb.cuLost = l
			}
		}
	}()
	caught := false
	for range maxPerCycle {
		if sb.pend != nil {
			if !q.offer(*sb.pend, mono) {
				return
			}
			sb.pend = nil
		}
		if sb.has && pt.known && sb.last+1 >= pt.next {
			caught = true // the live reader goes on from here
			break
		}
		if !sb.cu.ReadInto(&p.msg) {
			caught = true // the ring holds nothing newer: the live reader is at or before here
			break
		}
		m := &p.msg
		sb.last, sb.has = m.Seq, true
		payload, ok := encode(pt, m.Data)
		if !ok {
			sb.cnt.untranscodable.Add(1)
			continue
		}
		it := item{kind: kData, sub: sb.id, ns: m.CaptureNs, data: payload, cnt: sb.cnt}
		if !q.offer(it, mono) {
			sb.pend = &it
			return
		}
	}
	if caught {
		if l := sb.cu.Lost(); l > sb.cuLost {
			sb.cnt.lost.Add(l - sb.cuLost)
		}
		sb.cu.Close()
		sb.cu = nil
	}
}

// encode returns the payload a client is sent of a message of pt (a copy,
// shared by every client: read only); false when a packed message does
// not fit its layout.
func encode(pt *ptopic, data []byte) ([]byte, bool) {
	if pt.layout == nil {
		return append([]byte(nil), data...), true
	}
	out, err := pt.layout.AppendJSON(make([]byte, 0, 16*len(data)+64), data)
	return out, err == nil
}

// refresh follows the recorder's topic table: new topics are advertised,
// topics whose type changed are advertised again under a new channel
// (their subscriptions end: clients subscribe to the new one), freed
// topics are unadvertised.
func (p *pump) refresh() {
	p.lastPoll = time.Now()
	var adv []channelMsg
	var unadv []uint32
	for _, t := range p.rec.Topics() {
		pt := p.topics[t.ID]
		if t.Freed {
			if pt != nil {
				unadv = append(unadv, pt.ch.ID)
				p.remove(pt, fmt.Sprintf("topic %s is gone: its producer went offline and its ring was freed", pt.name))
			}
			continue
		}
		if pt != nil && pt.typ.Equal(t.Info.Type) {
			continue
		}
		if pt != nil {
			unadv = append(unadv, pt.ch.ID)
			p.remove(pt, fmt.Sprintf("topic %s changed its type to %s: subscribe to its new channel", pt.name, t.Info.Type))
		}
		pt = p.add(t)
		adv = append(adv, pt.ch)
	}
	if len(unadv) > 0 {
		b := mustJSON(unadvertiseMsg{Op: "unadvertise", ChannelIDs: unadv})
		for c := range p.clients {
			c.text(b)
		}
	}
	if len(adv) > 0 {
		b := mustJSON(advertiseMsg{Op: "advertise", Channels: adv})
		for c := range p.clients {
			c.text(b)
		}
	}
}

// add makes the ptopic of t and its channel.
func (p *pump) add(t engine.TopicStatus) *ptopic {
	name := t.Info.Name
	if t.Info.Channel != "" {
		name += "#" + t.Info.Channel
	}
	pt := &ptopic{id: t.ID, name: name, typ: t.Info.Type}
	k := chanKey{name, t.Info.Type.ID()}
	id, ok := p.chanIDs[k]
	if !ok {
		id = p.nextChan
		p.nextChan++
		p.chanIDs[k] = id
	}
	pt.ch, pt.layout = channelOf(id, name, t.Info.Type)
	if old := p.topics[t.ID]; old == nil {
		p.order = append(p.order, pt)
	} else {
		for i, x := range p.order {
			if x == old {
				p.order[i] = pt
			}
		}
	}
	p.topics[t.ID] = pt
	p.byChan[id] = pt
	return pt
}

// remove ends a topic's channel and its subscriptions, telling their
// clients why.
func (p *pump) remove(pt *ptopic, why string) {
	for _, sb := range append([]*sub(nil), pt.subs...) {
		sb.pc.c.statusMsg(LevelWarning, "", "subscription %d ended: %s", sb.id, why)
		p.unsubscribe(sb)
		sb.pc.c.nsubs.Store(int64(len(sb.pc.subs)))
	}
	delete(p.byChan, pt.ch.ID)
	delete(p.topics, pt.id)
	for i, x := range p.order {
		if x == pt {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

// channelOf is the channel a topic of type typ is advertised as: its
// encoding and schema as recorded (binary schemas, protobuf and
// flatbuffer, in base64 as the protocol wants), a packed struct as JSON
// with its JSON Schema (schema.AsJSON, as the MCAP export does; layout
// transcodes its messages).
func channelOf(id uint32, name string, typ ingest.Type) (channelMsg, *schema.Layout) {
	typ = typ.OrRaw()
	js, layout, err := schema.AsJSON(typ)
	if err != nil {
		js, layout = typ, nil // offered as recorded: clients cannot decode it, as in MCAP
	}
	ch := channelMsg{ID: id, Topic: name, Encoding: js.MessageEncoding, SchemaName: js.Schema.Name, SchemaEncoding: js.Schema.Encoding}
	switch js.Schema.Encoding {
	case ingest.SchemaProtobuf, ingest.SchemaFlatbuffer:
		ch.Schema = base64.StdEncoding.EncodeToString(js.Schema.Data)
	default:
		ch.Schema = string(js.Schema.Data)
	}
	return ch, layout
}
