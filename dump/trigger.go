package dump

import (
	"context"
	"fmt"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
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
	// Pre and Post override every selected topic's windows (0 = keep).
	Pre, Post time.Duration
	// Topics are globs selecting topics (empty = all recorded topics).
	Topics []string
	// Tag is an optional name tag; Severity an optional level.
	Tag      string
	Severity int
	// Params are free-form parameters recorded in the dump.
	Params map[string]string
}

// record is the trigger as the dump records it.
func (p *TriggerParams) record(id TriggerID) dumpinfo.Trigger {
	return dumpinfo.Trigger{ID: uint64(id), Reason: p.Reason, Source: p.Source, Rule: p.Rule, Tag: p.Tag,
		Severity: p.Severity, TimeNs: p.TimeNs, PreNs: int64(p.Pre), PostNs: int64(p.Post), Params: p.Params}
}

// Result reports a finished (or failed) dump.
type Result struct {
	// Triggers are the ids of every trigger the dump covers.
	Triggers []TriggerID
	// Reasons are their reasons, in order.
	Reasons []string
	// Path is the final file (empty on failure).
	Path string
	// Bytes is the file size; Messages the messages written.
	Bytes    int64
	Messages uint64
	// Lost is how many messages of the window were overwritten before the
	// dumper could read them (the sum of the topics' Overwritten; see
	// dumpinfo.StartLostLabel for when it is a lower bound).
	Lost uint64
	// StartNs and EndNs bound the dumped window (capture time).
	StartNs, EndNs int64
	// Err is nil on success.
	Err error
}

// Trigger asks for a dump around p.TimeNs. It returns at once with the
// trigger's id; the dump is written once the largest post window of the
// selected topics (plus the guard) has passed on the recorder's clock. Wait
// (or a Hook) reports the result after the file is finalized. A trigger
// overlapping a dump still waiting for its post window is merged into it
// under PolicyMerge.
func (d *Dumper) Trigger(p TriggerParams) (TriggerID, error) {
	if p.Reason == "" {
		return 0, fmt.Errorf("dump: trigger: empty Reason")
	}
	if p.Pre < 0 || p.Post < 0 {
		return 0, fmt.Errorf("dump: trigger %q: negative Pre/Post", p.Reason)
	}
	if p.Source == "" {
		p.Source = dumpinfo.SourceAPI
	}
	now := d.rec.Now()
	if p.TimeNs == 0 {
		p.TimeNs = now
	}
	sel := d.rec.Select(engine.Selection{TimeNs: p.TimeNs, Pre: p.Pre, Post: p.Post, Topics: p.Topics})
	if len(sel) == 0 {
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
	rec := p.record(id)
	from, to, due := windowHull(sel, p.TimeNs, int64(d.rec.Guard()))
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
	if max := d.cfg.MaxPerMinute; max > 0 {
		keep := d.recent[:0]
		for _, t := range d.recent {
			if t > now-int64(time.Minute) {
				keep = append(keep, t)
			}
		}
		d.recent = keep
		if len(d.recent) >= max {
			d.rateLimited.Add(1)
			d.rec.Unpin(sel...)
			return 0, fmt.Errorf("%w: %d dumps in the last minute (trigger %q)", ErrRateLimited, max, p.Reason)
		}
		d.recent = append(d.recent, now)
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
