package dump

import (
	"os"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/kway"
	"github.com/edr-lite/edr-lite/pack"
)

// source is one topic's cursor in the k-way merge of a dump's windows.
type source struct {
	w    *window
	c    *engine.WindowCursor
	e    engine.Entry // the next entry, peeked (not yet copied)
	acct dumpinfo.TopicAccount
	// inWindow counts the messages written from the window (not the
	// keep_last ones before it).
	inWindow uint64
	// anchor is the seq of the window's first message, exact when
	// anchorOK (see window).
	anchor   uint64
	anchorOK bool
	// infos holds the topic's info once per type span (types.go); span
	// is the span of the message being written.
	infos []ingest.TopicInfo
	spans []spanStart
	span  int
}

// info returns the TopicInfo of the peeked message's type span.
func (s *source) info() *ingest.TopicInfo {
	for s.span+1 < len(s.spans) && s.e.Seq >= s.spans[s.span+1].from {
		s.span++
	}
	return &s.infos[s.span]
}

// before orders the merge: capture time, then topic id (deterministic ties).
func before(a, b *source) bool {
	if a.e.CaptureNs != b.e.CaptureNs {
		return a.e.CaptureNs < b.e.CaptureNs
	}
	return a.w.Topic < b.w.Topic
}

// wrote accounts a message of the window written to the dump (e, the
// entry it was peeked as). Messages may be accounted out of their order
// (a borrowed one once its frame is written, a copied one at once): the
// first and last capture times are a minimum and a maximum.
func (s *source) wrote(e *engine.Entry) {
	a := &s.acct
	if a.Messages == 0 {
		a.FirstNs, a.LastNs = e.CaptureNs, e.CaptureNs
	}
	a.Messages++
	a.Bytes += e.Size
	a.FirstNs = min(a.FirstNs, e.CaptureNs)
	a.LastNs = max(a.LastNs, e.CaptureNs)
	if e.CaptureNs >= s.w.From {
		s.inWindow++
	}
}

// borrower is implemented by Writers that take payloads where they lie in
// the rings (NewPackWriteWriter's packWriter): Borrow adds the
// message s peeked and consumes it; the writer accounts it (source.wrote),
// a borrowed one once it is in the file intact, or counts it lost. Flush writes what is
// pending, so every message is accounted before the dump's figures are
// taken.
type borrower interface {
	borrowing() bool
	Borrow(s *source, t *ingest.TopicInfo) error
	Flush() error
}

// rewriter is implemented by the Writers that take payloads from the
// rings: how many frames or chunks they wrote again (Result.Rewritten).
type rewriter interface{ rewritten() uint64 }

// advance peeks the window's next message into s.e.
func (s *source) advance() bool {
	e, ok := s.c.Peek()
	s.e = e
	return ok
}

// estimateSize returns an upper bound of the bytes w takes in a dump
// (payloads plus per-message framing), scanning entry headers only.
func estimateSize(w *engine.Window) int64 {
	c := engine.NewWindowCursor(w)
	c.Position()
	var n int64
	for {
		e, ok := c.Peek()
		if !ok {
			return n
		}
		n += int64(e.Size) + perMessageOverhead + int64(len(w.Info.Name)+len(w.Info.Channel))
		c.Skip(e)
	}
}

// perMessageOverhead bounds a message's framing in a pack frame meta.
const perMessageOverhead = 48

// How often copyWindows looks at Stop's deadline.
const (
	stopCheckMessages = 1024
	stopCheckBytes    = 8 << 20
)

// copyWindows merges every selected topic's window in capture-time order
// into w and returns the dump's self-description.
func (d *Dumper) copyWindows(j *job, w Writer, res *Result) (dumpinfo.Info, error) {
	h := kway.New(before, len(j.order))
	srcs := make([]*source, 0, len(j.order))
	for _, id := range j.order {
		win := j.topics[id]
		s := &source{w: win, anchor: win.anchorSeq, anchorOK: win.anchorOK && win.tried && win.anchorFrom == win.From}
		if !s.anchorOK { // not anchored after the trigger: try now, before reading
			s.anchor, s.anchorOK, _ = engine.NewWindowCursor(&win.Window).Anchor(true)
		}
		s.c = engine.NewWindowCursor(&win.Window)
		s.c.Position()
		s.acct = dumpinfo.TopicAccount{Topic: pack.Topic(win.Info.Name, win.Info.Channel), Type: win.Info.Type.Schema.Name}
		for _, sp := range win.Types {
			s.spans = append(s.spans, spanStart{from: sp.FromSeq, typ: sp.Type})
		}
		s.infos = spanInfos(win.Info, s.spans)
		srcs = append(srcs, s)
		if s.advance() {
			h.Push(s)
		}
	}
	// A writer that can reserve room in its next frame gets each payload
	// copied straight from the ring; others get it through scratch.
	rs, direct := w.(reserver)
	bw, borrow := w.(borrower)
	borrow = borrow && bw.borrowing()
	var scratch []byte
	n, sinceCheck := 0, uint64(0)
	for h.Len() > 0 {
		s := h.Top()
		size := int(s.e.Size)
		var data []byte
		if borrow {
			if err := bw.Borrow(s, s.info()); err != nil {
				return dumpinfo.Info{}, err
			}
			sinceCheck += s.e.Size
		} else if direct {
			data = rs.Reserve(size)
		} else {
			if cap(scratch) < size {
				scratch = make([]byte, size)
			}
			data = scratch[:size]
		}
		if !borrow && s.c.Copy(s.e, data) {
			var err error
			if direct {
				err = rs.Commit(s.info(), s.e.GenNs, s.e.CaptureNs, data)
			} else {
				err = w.WriteMessage(s.info(), s.e.GenNs, s.e.CaptureNs, data)
			}
			if err != nil {
				return dumpinfo.Info{}, err
			}
			s.wrote(&s.e)
			sinceCheck += s.e.Size
		} // else overwritten while copied: advance re-peeks and counts it lost
		if s.advance() {
			h.FixTop()
		} else {
			h.Pop()
		}
		// Stop's deadline is checked every stopCheckMessages messages or
		// stopCheckBytes bytes, whichever comes first (large camera frames
		// would otherwise take a long time to reach the message count).
		if n++; n%stopCheckMessages == 0 || sinceCheck >= stopCheckBytes {
			sinceCheck = 0
			if dl := d.deadline.Load(); dl != 0 && time.Now().UnixNano() > dl {
				return dumpinfo.Info{}, ErrStopped
			}
		}
	}
	if borrow {
		if err := bw.Flush(); err != nil {
			return dumpinfo.Info{}, err
		}
	}
	return d.account(j, srcs, res), nil
}

// account builds the dump's self-description from the merge's per-topic
// figures: what each window lost, and the drops that fall in it.
func (d *Dumper) account(j *job, srcs []*source, res *Result) dumpinfo.Info {
	now := d.rec.Now()
	info := dumpinfo.Info{Triggers: j.records, Writer: d.cfg.WriterName, StartNs: j.from, EndNs: j.to, CreatedNs: now}
	if host, err := os.Hostname(); err == nil {
		info.Host = host
	}
	var upper, startLost []string
	for _, s := range srcs {
		// Overwritten: the window's messages (seqs from its anchor up to
		// where the merge stopped) not written, whether evicted before
		// the dump or overwritten while it read them.
		if seq, next := s.anchor, s.c.Next(); s.anchorOK && next >= seq+s.inWindow {
			s.acct.Overwritten = next - seq - s.inWindow
		} else {
			s.acct.Overwritten = s.c.Lost()
			startLost = append(startLost, s.acct.Topic)
		}
		// Drops whose capture time falls in the topic's window, not the
		// running totals.
		var exact bool
		s.acct.Oversize, s.acct.SkippedBusy, s.acct.LostAtSource, exact = d.rec.Drops(&s.w.Window)
		if !exact {
			upper = append(upper, s.acct.Topic)
		}
		s.acct.WindowFromNs, s.acct.WindowToNs = s.w.From, s.w.To
		s.acct.StartShort, s.acct.EndShort = shortCauses(&s.acct, d.rec.Coverage(&s.w.Window), now)
		res.Messages += s.acct.Messages
		res.Lost += s.acct.Overwritten
		res.Oversize += s.acct.Oversize
		res.SkippedBusy += s.acct.SkippedBusy
		res.LostAtSource += s.acct.LostAtSource
		info.Topics = append(info.Topics, s.acct)
	}
	if len(upper) > 0 || len(startLost) > 0 {
		info.Labels = map[string]string{}
		if len(upper) > 0 {
			info.Labels[dumpinfo.DropsUpperBoundLabel] = strings.Join(upper, ",")
		}
		if len(startLost) > 0 {
			info.Labels[dumpinfo.StartLostLabel] = strings.Join(startLost, ",")
		}
	}
	return info
}

// shortCauses says why a topic's held window (a.FirstNs, a.LastNs) starts
// after or ends before the window asked (a.WindowFromNs, a.WindowToNs),
// from what the recorder knows (cov) and when the dump was written (now).
// A shortfall with no known cause (a slow or silent topic) gets "".
func shortCauses(a *dumpinfo.TopicAccount, cov engine.Coverage, now int64) (start, end string) {
	from, to := a.WindowFromNs, a.WindowToNs
	if a.Messages == 0 || a.FirstNs > from {
		switch {
		case cov.DiscoveredNs > from:
			start = dumpinfo.ShortNotRecorded
		case a.Overwritten > 0 || cov.EvictedBelowNs > from:
			start = dumpinfo.ShortOverwritten
		}
	}
	if a.Messages == 0 || a.LastNs < to {
		switch {
		case now < to:
			end = dumpinfo.ShortStopped
		case cov.OfflineNs != 0 && cov.OfflineNs < to:
			end = dumpinfo.ShortOffline
		}
	}
	return start, end
}
