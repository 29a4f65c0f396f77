package dump

import (
	"context"
	"fmt"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
)

// TriggerID identifies an accepted trigger.
type TriggerID uint64

// TriggerParams describe one trigger.
type TriggerParams struct {
	// Reason is required; it names the dump file (sanitized).
	Reason string
	// Source says who triggered (a dumpinfo.Source* constant;
	// dumpinfo.SourceAPI when empty); Rule names the rule when a rule
	// fired.
	Source, Rule string
	// TimeNs is the trigger instant (0 = the recorder clock's now).
	TimeNs int64
	// At dumpinfo.AtLast anchors the trigger at the newest message of the
	// selected topics instead: a dump asked for after the producers went
	// silent holds their last window. TimeNs (or now) is then recorded as
	// when it was asked (dumpinfo.Trigger.RequestedNs).
	At string
	// Pre and Post, when set, override every selected topic's windows
	// (nil = the topics' own; zero is zero).
	Pre, Post *time.Duration
	// Topics are globs selecting topics (empty = all recorded topics).
	Topics []string
	// Tag is an optional name tag; Severity an optional level.
	Tag      string
	Severity int
	// Params are free-form parameters recorded in the dump.
	Params map[string]string
}

// record is the trigger as the dump records it, with the window
// [from, to] it selected.
func (p *TriggerParams) record(id TriggerID, from, to, requested int64) dumpinfo.Trigger {
	t := dumpinfo.Trigger{ID: uint64(id), Reason: p.Reason, Source: p.Source, Rule: p.Rule, Tag: p.Tag,
		Severity: p.Severity, TimeNs: p.TimeNs, Params: p.Params, FromNs: from, ToNs: to, At: p.At}
	if p.Pre != nil {
		t.PreNs, t.PreSet = int64(*p.Pre), true
	}
	if p.Post != nil {
		t.PostNs, t.PostSet = int64(*p.Post), true
	}
	if p.At == dumpinfo.AtLast {
		t.RequestedNs = requested
	}
	return t
}

// manual reports whether a trigger comes from an operator (control socket,
// signal, Go API) rather than a rule: it is counted against
// Config.MaxManualPerMinute, never against the rules' MaxPerMinute.
func (p *TriggerParams) manual() bool { return p.Source != dumpinfo.SourceLua }

// Dump outcomes (Result.Status).
const (
	StatusWritten   = "written"   // the file is complete and durable
	StatusFailed    = "failed"    // writing failed; no file was kept
	StatusRefused   = "refused"   // not written: too little free disk (ErrDiskLow)
	StatusAbandoned = "abandoned" // not finished before Stop's deadline (ErrStopped)
)

// Result reports a finished (or failed) dump.
type Result struct {
	// Status is the outcome: StatusWritten, StatusFailed, StatusRefused or
	// StatusAbandoned.
	Status string
	// Triggers are the ids of every trigger the dump covers.
	Triggers []TriggerID
	// Reasons are their reasons, in order; Records the triggers as the
	// dump records them (source, time and window of each).
	Reasons []string
	Records []dumpinfo.Trigger
	// Path is the final file (empty on failure).
	Path string
	// Bytes is the file size; Messages the messages written.
	Bytes    int64
	Messages uint64
	// Lost is how many messages of the window were overwritten before the
	// dumper could read them (the sum of the topics' Overwritten; see
	// dumpinfo.StartLostLabel for when it is a lower bound).
	Lost uint64
	// Oversize, SkippedBusy and LostAtSource sum the topics' other losses
	// inside the window (see dumpinfo.TopicAccount).
	Oversize, SkippedBusy, LostAtSource uint64
	// Late sums the topics' messages written out of event-time order
	// (dumpinfo.TopicAccount.Late).
	Late uint64
	// Rewritten counts the frames (pack) or chunks (MCAP) written a second
	// time because a producer overwrote a payload the writer took from
	// its ring before the write was checked; the overwritten messages are
	// left out and counted in Lost (NewPackWriteWriter, NewMCAPWriter).
	Rewritten uint64
	// StartNs and EndNs bound the dumped window (capture time).
	StartNs, EndNs int64
	// Seal is the dump's seal when it was signed (Config.Signer): its
	// key, digest and place in the directory's chain.
	Seal *evidence.Seal
	// Err is nil on success.
	Err error
}

// Trigger asks for a dump around p.TimeNs. It returns at once with the
// trigger's id; the dump is written once the largest post window of the
// selected topics (plus the guard) has passed on the recorder's clock. Wait
// (or a Hook) reports the result after the file is finalized. A trigger
// overlapping a dump still waiting for its post window is merged into it
// under PolicyMerge. A refused trigger (rate limit, nothing to dump) is
// counted and its error says why.
func (d *Dumper) Trigger(p TriggerParams) (TriggerID, error) {
	if p.Reason == "" {
		return 0, fmt.Errorf("dump: trigger: empty Reason")
	}
	if p.Pre != nil && *p.Pre < 0 || p.Post != nil && *p.Post < 0 {
		return 0, fmt.Errorf("dump: trigger %q: negative Pre/Post", p.Reason)
	}
	if p.Source == "" {
		p.Source = dumpinfo.SourceAPI
	}
	now := d.rec.Now()
	requested := now
	switch p.At {
	case dumpinfo.AtNow:
		if p.TimeNs == 0 {
			p.TimeNs = now
		}
	case dumpinfo.AtLast:
		if p.TimeNs != 0 {
			requested = p.TimeNs // a rule's message time
		}
		t, ok := d.rec.Newest(p.Topics)
		if !ok {
			d.countRefused(&p)
			return 0, fmt.Errorf("%w: %q at the last message: the selected topics (%v) hold none", ErrNoTopics, p.Reason, p.Topics)
		}
		p.TimeNs = t
	default:
		return 0, fmt.Errorf("dump: trigger %q: At %q: want %q or %q", p.Reason, p.At, dumpinfo.AtNow, dumpinfo.AtLast)
	}
	sel := d.rec.Select(engine.Selection{TimeNs: p.TimeNs, Pre: p.Pre, Post: p.Post, Topics: p.Topics})
	if len(sel) == 0 {
		d.countRefused(&p)
		return 0, fmt.Errorf("%w: %q (topics %v)", ErrNoTopics, p.Reason, p.Topics)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		d.rec.Unpin(sel...)
		return 0, ErrNotStarted
	}
	d.nextTrig++
	id := TriggerID(d.nextTrig)
	from, to, due := windowHull(sel, p.TimeNs, int64(d.rec.Guard()))
	rec := p.record(id, from, to, requested)
	if d.cfg.Policy == PolicyMerge {
		for _, j := range d.pending {
			if j.writing || to < j.from || from > j.to {
				continue
			}
			d.rec.Unpin(j.add(id, rec, sel, from, to, due)...)
			d.byTrig[id] = j
			d.coalesced.Add(1)
			return id, nil
		}
	}
	recent, max, what := &d.recent, d.cfg.MaxPerMinute, "rule"
	if p.manual() {
		recent, max, what = &d.recentManual, d.cfg.MaxManualPerMinute, "manual"
	}
	if max > 0 {
		keep := (*recent)[:0]
		for _, t := range *recent {
			if t > now-int64(time.Minute) {
				keep = append(keep, t)
			}
		}
		*recent = keep
		if len(keep) >= max {
			d.rec.Unpin(sel...)
			if p.manual() {
				d.rateLimitedManual.Add(1)
				return 0, fmt.Errorf("%w: %d %s dumps in the last minute, the most allowed (manual trigger %q from %s refused)",
					ErrRateLimited, max, what, p.Reason, p.Source)
			}
			d.rateLimited.Add(1)
			return 0, fmt.Errorf("%w: %d %s dumps in the last minute, the most allowed (trigger %q refused)", ErrRateLimited, max, what, p.Reason)
		}
		*recent = append(*recent, now)
	}
	d.nextDump++
	j := &job{seq: d.nextDump, t0: p.TimeNs, reason: p.Reason, from: from, to: to, due: due,
		topics: make(map[ingest.TopicID]*window), done: make(chan struct{})}
	j.add(id, rec, sel, from, to, due) // a new job keeps every pin
	d.pending = append(d.pending, j)
	d.byTrig[id] = j
	d.forget()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return id, nil
}

// countRefused counts a trigger refused before it reached a job.
func (d *Dumper) countRefused(p *TriggerParams) {
	if p.manual() {
		d.refusedManual.Add(1)
	} else {
		d.refusedRule.Add(1)
	}
}

// Wait blocks until the dump covering trigger id is finalized (or failed)
// and returns its result, or ctx's error.
func (d *Dumper) Wait(ctx context.Context, id TriggerID) (Result, error) {
	d.mu.Lock()
	j := d.byTrig[id]
	d.mu.Unlock()
	if j == nil {
		return Result{}, fmt.Errorf("%w: %d", ErrUnknownTrigger, id)
	}
	select {
	case <-j.done:
		return j.res, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// windowHull returns the union window of sel and when the dump is due:
// T + the largest post + guard (T itself when every post is 0).
func windowHull(sel []engine.Window, t, guard int64) (from, to, due int64) {
	from, to = sel[0].From, sel[0].To
	var maxPost int64
	for _, w := range sel {
		from, to = min(from, w.From), max(to, w.To)
		maxPost = max(maxPost, w.Post)
	}
	due = t
	if maxPost > 0 {
		due = t + maxPost + guard
	}
	return from, to, due
}
