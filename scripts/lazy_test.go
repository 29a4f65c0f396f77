package scripts

import (
	"bytes"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// TestLivePayloadCopiedOnlyWhenRead: a live rule that reads only a
// message's header fields (m.ts, m.size) copies none of its payload out of
// the ring; a rule that reads the bytes gets them, whole.
func TestLivePayloadCopiedOnlyWhenRead(t *testing.T) {
	rec, vc := newLiveRecorder(t, 1<<20)
	id, err := rec.Discover(ingest.TopicInfo{Name: "cam", Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	sizes, fs := load(t, `rule{name='sizes', topics='cam'}
local last = 0
function on_message(m)
  if m.size ~= 3000 or m.ts <= last then trigger{reason='size '..m.size} end
  last = m.ts
end`, nil)
	bytesRule, fb := load(t, `rule{name='bytes', topics='cam'}
function on_message(m)
  local first, lastb = m:u8(0), m:u8(2999)
  if first ~= m.seq % 256 or lastb ~= (m.seq + 1) % 256 then trigger{reason='bytes '..first..' '..lastb} end
end`, nil)
	l, err := StartLive(rec, []*Rule{sizes, bytesRule}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	const n = 50
	for i := range n {
		b := bytes.Repeat([]byte{byte(i)}, 3000)
		b[2999] = byte(i + 1)
		ts := at(time.Duration(i) * time.Millisecond)
		vc.Set(ts)
		if !rec.IngestAt(id, ts, 0, b) {
			t.Fatal("ingest refused")
		}
	}
	waitFor(t, l, "all messages", func() bool {
		st := l.Status()
		return st[0].Messages == n && st[1].Messages == n
	})
	var caps [2]int
	for i, ru := range l.runners {
		ru.do(func() { caps[i] = cap(ru.msg.Data) })
	}
	l.Close()
	if len(fs.list) != 0 || len(fb.list) != 0 {
		t.Fatalf("wrong sizes or bytes: %+v %+v", fs.list, fb.list)
	}
	if caps[0] != 0 {
		t.Errorf("the rule reading m.ts and m.size copied payloads (a buffer of %d bytes)", caps[0])
	}
	if caps[1] < 3000 {
		t.Errorf("the rule reading bytes has a buffer of %d bytes", caps[1])
	}
}

// TestFeedPayloadOverwrittenBeforeRead: a live message whose payload the
// ring overwrote before the rule read it stops the callback at the read
// and is counted as skipped, not as an error (the rule stays enabled); a
// rule that does not read the payload gets the message.
func TestFeedPayloadOverwrittenBeforeRead(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	id, err := rec.Discover(ingest.TopicInfo{Name: "x", Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	reads, fr := load(t, `rule{name='reads', topics='x'}
function on_message(m)
  local b = m:u8(0)
  trigger{reason='read '..b}
end`, nil)
	sizes, fs := load(t, `rule{name='sizes', topics='x'}
function on_message(m) trigger{reason='size '..m.size} end`, nil)
	rd, err := rec.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	big := bytes.Repeat([]byte{7}, 1000)
	vc.Set(at(0))
	rec.IngestAt(id, at(0), 0, big)
	var em engine.Message
	n, ok := rd.ReadHeader(&em)
	if !ok {
		t.Fatal("no message")
	}
	for i := range 200 { // 200 KB through a 64 KiB ring
		vc.Set(at(time.Duration(i+1) * time.Millisecond))
		rec.IngestAt(id, at(time.Duration(i+1)*time.Millisecond), 0, big)
	}
	torn := func() *Message {
		return &Message{Topic: "x", TS: em.CaptureNs, Seq: em.Seq, lazy: rd, size: n}
	}
	reads.Feed(torn())
	if st := reads.Status(); st.Skipped != 1 || st.Messages != 0 || st.Errors != 0 || st.Disabled || len(fr.list) != 0 {
		t.Fatalf("after an overwritten payload: %+v, triggers %+v", st, fr.list)
	}
	reads.Feed(&Message{Topic: "x", TS: at(time.Second), Data: []byte{9}})
	if st := reads.Status(); st.Skipped != 1 || st.Messages != 1 || len(fr.list) != 1 || fr.list[0].Reason != "read 9" {
		t.Fatalf("the next message: %+v, triggers %+v", st, fr.list)
	}
	rd.ReadHeader(&em) // lazy again, the header of a message long overwritten
	if _, ok := rd.ReadHeader(&em); !ok {
		t.Fatal("no message")
	}
	for i := range 200 {
		ts := at(time.Second + time.Duration(i+1)*time.Millisecond)
		vc.Set(ts)
		rec.IngestAt(id, ts, 0, big)
	}
	sizes.Feed(torn())
	if st := sizes.Status(); st.Skipped != 0 || st.Messages != 1 || len(fs.list) != 1 || fs.list[0].Reason != "size 1000" {
		t.Fatalf("a rule not reading the payload: %+v, triggers %+v", st, fs.list)
	}
}
