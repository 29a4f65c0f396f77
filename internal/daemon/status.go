package daemon

import (
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/scripts"
	"github.com/edr-lite/edr-lite/upload"
)

// Status is the document served by "edr-lite status --json" and /status.
type Status struct {
	UptimeS float64       `json:"uptime_s"`
	Arena   ArenaStatus   `json:"arena"`
	Dumps   DumpStatus    `json:"dumps"`
	Topics  []TopicStatus `json:"topics"`
	Rules   []RuleStatus  `json:"rules"`
	Sources []SourceStat  `json:"sources"`
	Control ControlStatus `json:"control"`
	// Upload is the upload queue's state; absent when [upload] is off.
	Upload *upload.Status `json:"upload,omitempty"`
	// Live is the live server's state; absent when [live] is off (and
	// in the ECU build, which has no live server: nohttp.go).
	Live *LiveStatus `json:"live,omitempty"`
	// CAN is every [[source.can]] bus's accounting, CANCapture the CAN
	// over Ethernet sources' own counters (can.go); absent without any.
	CAN        []CANBusStatus     `json:"can,omitempty"`
	CANCapture []CANCaptureStatus `json:"can_capture,omitempty"`
}

// ControlStatus counts what the control socket survived.
type ControlStatus struct {
	// AcceptErrors counts failed accepts (out of descriptors, say) that
	// the control socket retried after a back-off.
	AcceptErrors uint64 `json:"accept_errors"`
}

// ArenaStatus is the cache's occupancy.
type ArenaStatus struct {
	Total       int64 `json:"total"`
	Used        int64 `json:"used"`
	LargestFree int64 `json:"largest_free"`
	Locked      bool  `json:"locked"`
}

// DumpStatus counts dumps and triggers.
type DumpStatus struct {
	Written     uint64 `json:"written"`
	Failed      uint64 `json:"failed"`
	RefusedDisk uint64 `json:"refused_low_disk"`
	Coalesced   uint64 `json:"triggers_coalesced"`
	RateLimited uint64 `json:"triggers_rate_limited"`
	// ManualRateLimited counts operators' triggers refused by their own
	// limit (max_manual_dumps_per_minute); ManualRefused and RuleRefused
	// triggers that selected no topic or no message.
	ManualRateLimited  uint64 `json:"manual_triggers_rate_limited"`
	ManualRefused      uint64 `json:"manual_triggers_refused"`
	RuleRefused        uint64 `json:"rule_triggers_refused"`
	Rotated            uint64 `json:"rotated"`
	HookResultsDropped uint64 `json:"hook_results_dropped"`
	// Late counts messages written out of event-time order over every
	// dump (dumpinfo.TopicAccount.Late).
	Late uint64 `json:"late"`
	// Rewritten counts frames or chunks dumps wrote again because a
	// producer overwrote a payload taken from its ring before the write
	// was checked (dump.Result.Rewritten; the messages lost are counted
	// as overwritten).
	Rewritten   uint64   `json:"rewritten"`
	Pending     int      `json:"pending"`
	Dumping     bool     `json:"dumping"`
	LastError   string   `json:"last_error,omitempty"`
	LeftoverTmp []string `json:"leftover_tmp,omitempty"`

	// RotatedFor counts the rotated dumps by the bound each deletion
	// served (max_files, max_total_bytes, min_free_disk); only those not 0.
	RotatedFor map[string]uint64 `json:"rotated_for,omitempty"`
	// LeftoverRemoved are the empty leftovers of interrupted dumps removed
	// at start (LeftoverTmp the others, kept as NAME.interrupted).
	LeftoverRemoved []string `json:"leftover_removed,omitempty"`
	// Signing (docs/evidence.md): the key dumps are signed with ("" off),
	// the dump directory's chain and its last counter, dumps or rotations
	// the chain could not record, what opening it found.
	SigningKey  string   `json:"signing_key,omitempty"`
	Chain       string   `json:"chain,omitempty"`
	ChainHead   uint64   `json:"chain_head,omitempty"`
	ChainErrors uint64   `json:"chain_errors,omitempty"`
	ChainNotes  []string `json:"chain_notes,omitempty"`
}

// TopicStatus is one topic's figures: rate, window held, drops by cause.
type TopicStatus struct {
	Name           string `json:"name"`
	Channel        string `json:"channel,omitempty"`
	Type           string `json:"type,omitempty"`     // schema (type) name
	Encoding       string `json:"encoding,omitempty"` // message encoding it is recorded under
	SchemaEncoding string `json:"schema_encoding,omitempty"`
	// TypeError is why the type the topic declared was refused (it is then
	// recorded as raw bytes); TypeChanges counts restarts with another type.
	TypeError        string  `json:"type_error,omitempty"`
	TypeChanges      int     `json:"type_changes,omitempty"`
	Source           string  `json:"source,omitempty"`
	Online           bool    `json:"online"`
	RateHz           float64 `json:"rate_hz"`
	RingBytes        int     `json:"ring_bytes"`
	HeldBytes        uint64  `json:"held_bytes"`
	HeldMessages     uint64  `json:"held_messages"`
	HeldSeconds      float64 `json:"held_seconds"`
	RetentionSeconds float64 `json:"retention_seconds"`
	Written          uint64  `json:"written"`
	EvictedAge       uint64  `json:"evicted_age"`
	EvictedSize      uint64  `json:"evicted_size"`
	RejectedOversize uint64  `json:"rejected_oversize"`
	LostToReaders    uint64  `json:"lost_to_readers"`
	RejectedOffline  uint64  `json:"rejected_offline"`
	SkippedBusy      uint64  `json:"skipped_busy"`
	LostAtSource     uint64  `json:"lost_at_source"` // lost before reaching the recorder (shm overwrite, kernel drop)
}

// RuleStatus is one rule's figures and the window its dumps use: the
// rule's own, or the recorder's ([recorder] pre and post, to which
// [[topic]] overrides still apply) as PreFrom / PostFrom say.
type RuleStatus struct {
	scripts.RuleStatus
	PreS     float64 `json:"pre_s"`
	PostS    float64 `json:"post_s"`
	PreFrom  string  `json:"pre_from"`  // "rule" or "recorder"
	PostFrom string  `json:"post_from"` // "rule" or "recorder"
}

// SourceStat is one source's figures.
type SourceStat struct {
	Kind string `json:"kind"` // shm, udp, raw, can
	Key  string `json:"key"`  // in the configuration: "source.udp[1]"
	Name string `json:"name"`
	// Receiving is false while the source records nothing: Cause (one of
	// the Cause constants) and Why say why ("no producer's segment in
	// /dev/shm/edr", "stopped: ...", "nothing received on ... since the
	// recorder started").
	Receiving bool   `json:"receiving"`
	Cause     string `json:"cause,omitempty"`
	Why       string `json:"why,omitempty"`
	Messages  uint64 `json:"messages"`
	Bytes     uint64 `json:"bytes"`
	Lost      uint64 `json:"lost"`
	Rejected  uint64 `json:"rejected"`
	Errors    uint64 `json:"errors"`
	// shm: segments found finished (their producer closed them or died
	// before the recorder found them), read and counted, not recorded;
	// and segments not followed for max_topics.
	LeftoverSegments uint64 `json:"leftover_segments,omitempty"`
	LeftoverMessages uint64 `json:"leftover_messages,omitempty"`
	RefusedSegments  uint64 `json:"refused_segments,omitempty"`
}

// Status returns a snapshot of everything.
func (d *Daemon) Status() Status {
	st, ds := d.rec.Status(), d.dumper.Status()
	out := Status{
		Arena: ArenaStatus{Total: st.Arena.Total, Used: st.Arena.Used, LargestFree: st.Arena.LargestFree, Locked: st.Arena.Locked},
		Dumps: DumpStatus{Written: ds.Written, Failed: ds.Failed, RefusedDisk: ds.RefusedDisk,
			Coalesced: ds.TriggersCoalesced, RateLimited: ds.TriggersRateLimited, Rotated: ds.Rotated,
			ManualRateLimited: ds.ManualRateLimited, ManualRefused: ds.ManualRefused, RuleRefused: ds.RuleRefused,
			HookResultsDropped: ds.HookResultsDropped, Pending: ds.Pending, Dumping: ds.Dumping,
			LastError: ds.LastError, LeftoverTmp: ds.LeftoverTmp, Late: ds.Late, Rewritten: ds.Rewritten},
		Topics:  []TopicStatus{},
		Rules:   []RuleStatus{},
		Sources: []SourceStat{},
	}
	out.Dumps.LeftoverRemoved = ds.LeftoverRemoved
	out.Dumps.SigningKey, out.Dumps.Chain, out.Dumps.ChainHead = ds.SigningKey, ds.Chain, ds.ChainHead
	out.Dumps.ChainErrors, out.Dumps.ChainNotes = ds.ChainErrors, ds.ChainNotes
	for r, n := range ds.RotatedFor {
		if n > 0 {
			if out.Dumps.RotatedFor == nil {
				out.Dumps.RotatedFor = map[string]uint64{}
			}
			out.Dumps.RotatedFor[r] = n
		}
	}
	if !d.started.IsZero() {
		out.UptimeS = time.Since(d.started).Seconds()
	}
	if d.uploader != nil {
		us := d.uploader.Status()
		out.Upload = &us
	}
	if d.ctl != nil {
		out.Control.AcceptErrors = d.ctl.AcceptErrors()
	}
	out.Live = d.liveStatus()
	// A segment's type the shm consumer could not use (a schema too large
	// to read) is the topic's type error too.
	shmTypeErrs := map[[2]string]string{}
	for _, c := range d.shms {
		for _, seg := range c.Segments() {
			if seg.TypeErr != nil {
				shmTypeErrs[[2]string{seg.Topic.Name, seg.Topic.Channel}] = seg.TypeErr.Error()
			}
		}
	}
	for _, t := range st.Topics {
		c := t.Counters
		ts := TopicStatus{Name: t.Info.Name, Channel: t.Info.Channel, Type: t.Info.Type.Schema.Name,
			Encoding: t.Info.Type.MessageEncoding, SchemaEncoding: t.Info.Type.Schema.Encoding, TypeChanges: t.TypeChanges,
			Source: t.Info.Source,
			Online: t.Online, RateHz: t.RateHz, RingBytes: t.RingBytes, HeldBytes: c.HeldBytes, HeldMessages: c.HeldMessages,
			RetentionSeconds: float64(t.RetentionNs) / 1e9, Written: c.Written, EvictedAge: c.EvictedAge,
			EvictedSize: c.EvictedSize, RejectedOversize: c.RejectedOversize, LostToReaders: c.LostToReaders,
			RejectedOffline: c.RejectedOffline, SkippedBusy: c.SkippedBusy, LostAtSource: c.LostAtSource}
		if t.TypeErr != nil {
			ts.TypeError = t.TypeErr.Error()
		} else if e, ok := shmTypeErrs[[2]string{t.Info.Name, t.Info.Channel}]; ok && t.Info.Type.MessageEncoding == ingest.EncodingRaw {
			ts.TypeError = e
		}
		if c.NewestNs > c.OldestNs {
			ts.HeldSeconds = float64(c.NewestNs-c.OldestNs) / 1e9
		}
		out.Topics = append(out.Topics, ts)
	}
	d.liveMu.Lock()
	live := d.live
	d.liveMu.Unlock()
	if live != nil {
		for i, rs := range live.Status() {
			w := windowOf(d.cfg, live.Decl(i))
			out.Rules = append(out.Rules, RuleStatus{RuleStatus: rs, PreS: w.Pre.Seconds(), PostS: w.Post.Seconds(),
				PreFrom: w.PreFrom, PostFrom: w.PostFrom})
		}
	}
	out.Sources = d.sourceStats()
	out.CAN, out.CANCapture = d.canStatus()
	return out
}
