package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
)

// More sentinel errors of the recorder's dump side.
var (
	// ErrNoDumps is returned by Trigger when Config.Dump.Dir is "".
	ErrNoDumps = errors.New("engine: dumps disabled (no dump directory)")
	// ErrNotStarted is returned by Trigger before Start or after Stop.
	ErrNotStarted = errors.New("engine: recorder not started")
	// ErrRateLimited is returned by Trigger when Dump.MaxPerMinute dumps
	// were already started in the last minute.
	ErrRateLimited = errors.New("engine: dump rate limit reached")
	// ErrNoTopics is returned by Trigger when no topic matches.
	ErrNoTopics = errors.New("engine: trigger selects no topic")
	// ErrDiskLow is a dump result error: writing it would leave less than
	// Dump.MinFreeDisk free.
	ErrDiskLow = errors.New("engine: not enough free disk for the dump")
	// ErrStopped is a dump result error: the recorder stopped before the
	// dump could be finished; no file was kept.
	ErrStopped = errors.New("engine: recorder stopped before the dump finished")
	// ErrUnknownTrigger is returned by Wait for an id never handed out (or
	// long forgotten).
	ErrUnknownTrigger = errors.New("engine: unknown trigger id")
)

// TriggerID identifies an accepted trigger.
type TriggerID uint64

// TriggerParams describe one trigger.
type TriggerParams struct {
	// Reason is required; it names the dump file (sanitized).
	Reason string
	// Source says who triggered: "lua", "api", "signal", "command" ("api"
	// when empty); Rule names the rule when a rule fired.
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

// DumpResult reports a finished (or failed) dump.
type DumpResult struct {
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

// Trigger asks for a dump around params.TimeNs. It returns at once with the
// trigger's id; the dump is written by the dumper once the largest post
// window of the selected topics (plus the guard) has passed on the
// recorder's clock. Wait (or a Hook) reports the result after the file is
// finalized. A trigger overlapping a dump still waiting for its post window
// is merged into it under PolicyMerge.
func (r *Recorder) Trigger(p TriggerParams) (TriggerID, error) {
	if r.cfg.Dump.Dir == "" {
		return 0, ErrNoDumps
	}
	if p.Reason == "" {
		return 0, fmt.Errorf("engine: trigger: empty Reason")
	}
	if p.Pre < 0 || p.Post < 0 {
		return 0, fmt.Errorf("engine: trigger %q: negative Pre/Post", p.Reason)
	}
	if p.Source == "" {
		p.Source = dumpinfo.SourceAPI
	}
	now := r.clk.Now()
	if p.TimeNs == 0 {
		p.TimeNs = now
	}
	sel := r.selectTopics(&p)
	if len(sel) == 0 {
		return 0, fmt.Errorf("%w: %q (topics %v)", ErrNoTopics, p.Reason, p.Topics)
	}
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		r.unpinTopics(sel)
		return 0, ErrNotStarted
	}
	d.nextTrig++
	id := TriggerID(d.nextTrig)
	rec := triggerRecord(id, &p)
	from, to, due := windowHull(sel, p.TimeNs, int64(r.cfg.Guard))
	if r.cfg.Dump.Policy == PolicyMerge {
		for _, pd := range d.pending {
			if pd.writing || to < pd.from || from > pd.to {
				continue
			}
			pd.merge(id, rec, sel, from, to, due)
			d.byTrig[id] = pd
			d.coalesced.Add(1)
			r.unpinTopics(sel) // pd pinned what it already had; merge pins new ones
			return id, nil
		}
	}
	if max := r.cfg.Dump.MaxPerMinute; max > 0 {
		keep := d.recent[:0]
		for _, t := range d.recent {
			if t > now-int64(time.Minute) {
				keep = append(keep, t)
			}
		}
		d.recent = keep
		if len(d.recent) >= max {
			d.rateLimited.Add(1)
			r.unpinTopics(sel)
			return 0, fmt.Errorf("%w: %d dumps in the last minute (trigger %q)", ErrRateLimited, max, p.Reason)
		}
		d.recent = append(d.recent, now)
	}
	d.nextDump++
	pd := &dumpJob{seq: d.nextDump, t0: p.TimeNs, reason: p.Reason, from: from, to: to, due: due,
		topics: make(map[ingest.TopicID]*dumpTopic), done: make(chan struct{})}
	pd.merge(id, rec, sel, from, to, due)
	r.unpinTopics(sel)
	d.pending = append(d.pending, pd)
	d.byTrig[id] = pd
	d.forget()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return id, nil
}

// Wait blocks until the dump covering trigger id is finalized (or failed)
// and returns its result, or ctx's error.
func (r *Recorder) Wait(ctx context.Context, id TriggerID) (DumpResult, error) {
	r.d.mu.Lock()
	pd := r.d.byTrig[id]
	r.d.mu.Unlock()
	if pd == nil {
		return DumpResult{}, fmt.Errorf("%w: %d", ErrUnknownTrigger, id)
	}
	select {
	case <-pd.done:
		return pd.res, nil
	case <-ctx.Done():
		return DumpResult{}, ctx.Err()
	}
}

// selectTopics returns the topics p selects with their windows, pinned.
func (r *Recorder) selectTopics(p *TriggerParams) []dumpTopic {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sel []dumpTopic
	for _, t := range r.topics {
		if t.freed {
			continue
		}
		if len(p.Topics) > 0 {
			in := false
			for _, g := range p.Topics {
				if matchTopic(g, &t.info) {
					in = true
					break
				}
			}
			if !in {
				continue
			}
		}
		s := &t.settings
		pre, post := s.pre, s.post
		if p.Pre > 0 {
			pre = int64(p.Pre)
		}
		if p.Post > 0 {
			post = int64(p.Post)
		}
		dt := dumpTopic{t: t, from: p.TimeNs - pre, to: p.TimeNs + post, post: post}
		if s.onlyFront {
			dt.to, dt.post = p.TimeNs, 0
		}
		if s.onlyBack {
			dt.from = p.TimeNs
		}
		t.pins.Add(1)
		sel = append(sel, dt)
	}
	return sel
}

// windowHull returns the union window of sel and when the dump is due:
// T + the largest post + guard (T itself when every post is 0).
func windowHull(sel []dumpTopic, t, guard int64) (from, to, due int64) {
	from, to = sel[0].from, sel[0].to
	var maxPost int64
	for _, dt := range sel {
		from, to = min(from, dt.from), max(to, dt.to)
		maxPost = max(maxPost, dt.post)
	}
	due = t
	if maxPost > 0 {
		due = t + maxPost + guard
	}
	return from, to, due
}
