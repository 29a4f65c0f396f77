package daemon

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	Kind     string `json:"kind"` // shm, udp, raw
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	Lost     uint64 `json:"lost"`
	Rejected uint64 `json:"rejected"`
	Errors   uint64 `json:"errors"`
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
	for i, c := range d.shms {
		s := c.Stats()
		out.Sources = append(out.Sources, SourceStat{Kind: "shm", Name: d.cfg.Sources.SHM[i].Dir, Messages: s.Messages,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: uint64(len(s.Errors)),
			LeftoverSegments: uint64(s.Leftovers), LeftoverMessages: s.LeftoverMessages, RefusedSegments: uint64(s.Refused)})
	}
	for i, u := range d.udps {
		s := u.Stats()
		out.Sources = append(out.Sources, SourceStat{Kind: "udp", Name: d.cfg.Sources.UDP[i].Listen, Messages: s.Ingested,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: s.Malformed + s.Truncated + s.Unmapped})
	}
	for i, r := range d.raws {
		s := r.Stats()
		out.Sources = append(out.Sources, SourceStat{Kind: "raw", Name: d.cfg.Sources.Raw[i].Interface, Messages: s.Ingested,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: s.Malformed + s.Truncated + s.Unmapped})
	}
	return out
}

// metricsHandler serves the status as Prometheus metrics, computed at scrape
// time from one snapshot.
func (d *Daemon) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{d: d})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

type collector struct{ d *Daemon }

var (
	descTopicWritten = prometheus.NewDesc("edr_topic_messages_total", "Messages stored in the topic's ring.", []string{"topic"}, nil)
	descTopicBytes   = prometheus.NewDesc("edr_topic_held_bytes", "Bytes of history the topic's ring holds now.", []string{"topic"}, nil)
	descTopicHeld    = prometheus.NewDesc("edr_topic_held_seconds", "Seconds of history the topic's ring holds now.", []string{"topic"}, nil)
	descTopicRate    = prometheus.NewDesc("edr_topic_rate_hz", "Message rate over the history held.", []string{"topic"}, nil)
	descTopicDropped = prometheus.NewDesc("edr_topic_dropped_total", "Messages lost before a dump could hold them, by cause.", []string{"topic", "cause"}, nil)
	descTopicEvicted = prometheus.NewDesc("edr_topic_evicted_total",
		"Messages the ring let go: age (older than the retention, the normal end of every message) or size (pushed out by the ring's byte cap before reaching the retention: the ring holds less than its window).",
		[]string{"topic", "cause"}, nil)
	descArena        = prometheus.NewDesc("edr_cache_bytes", "Cache (arena) bytes by state.", []string{"state"}, nil)
	descDumps        = prometheus.NewDesc("edr_dumps_total", "Dumps by outcome.", []string{"outcome"}, nil)
	descTriggers     = prometheus.NewDesc("edr_triggers_total", "Triggers not turned into their own dump, by cause.", []string{"cause"}, nil)
	descRuleTriggers = prometheus.NewDesc("edr_rule_triggers_total", "Triggers fired by a rule.", []string{"rule"}, nil)
	descRuleDisabled = prometheus.NewDesc("edr_rule_disabled", "1 when the rule was disabled by an error or a blown budget.", []string{"rule"}, nil)
	descRuleCall     = prometheus.NewDesc("edr_rule_call_seconds", "Seconds the rule has been inside its current callback (0 when idle).", []string{"rule"}, nil)
	descRuleStuck    = prometheus.NewDesc("edr_rule_stuck", "1 when the rule has been inside one callback for over a second.", []string{"rule"}, nil)
	descDumpLate     = prometheus.NewDesc("edr_dump_late_messages_total",
		"Messages dumps wrote out of event-time order: later than the event-time reorder stage's bound.", nil, nil)
	descDumpRewritten = prometheus.NewDesc("edr_dump_rewritten_total",
		"Frames or chunks dumps wrote a second time, without the payloads producers overwrote while the writer held them in their rings (those messages are counted lost to readers).", nil, nil)
	descSourceLost   = prometheus.NewDesc("edr_source_lost_total", "Messages a source lost before the recorder could read them.", []string{"kind", "source"}, nil)
	descLeftoverSegs = prometheus.NewDesc("edr_source_leftover_segments_total", "Shared-memory segments found finished (producer closed or dead before the recorder found them): read, counted, not recorded.", []string{"kind", "source"}, nil)
	descLeftoverMsgs = prometheus.NewDesc("edr_source_leftover_messages_total", "Messages in leftover segments, not recorded.", []string{"kind", "source"}, nil)
	descRefusedSegs  = prometheus.NewDesc("edr_source_refused_segments", "Shared-memory segments not followed now: max_topics reached.", []string{"kind", "source"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTopicWritten, descTopicBytes, descTopicHeld, descTopicRate, descTopicDropped, descTopicEvicted,
		descArena, descDumps, descTriggers, descRuleTriggers, descRuleDisabled, descRuleCall, descRuleStuck, descSourceLost,
		descLeftoverSegs, descLeftoverMsgs, descRefusedSegs, descDumpLate, descDumpRewritten} {
		ch <- d
	}
	for _, d := range uploadDescs() {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.d.Status()
	for _, t := range st.Topics {
		name := t.Name
		if t.Channel != "" {
			name += "#" + t.Channel
		}
		ch <- prometheus.MustNewConstMetric(descTopicWritten, prometheus.CounterValue, float64(t.Written), name)
		ch <- prometheus.MustNewConstMetric(descTopicBytes, prometheus.GaugeValue, float64(t.HeldBytes), name)
		ch <- prometheus.MustNewConstMetric(descTopicHeld, prometheus.GaugeValue, t.HeldSeconds, name)
		ch <- prometheus.MustNewConstMetric(descTopicRate, prometheus.GaugeValue, t.RateHz, name)
		for cause, v := range map[string]uint64{"oversize": t.RejectedOversize, "lost_to_readers": t.LostToReaders,
			"offline": t.RejectedOffline, "skipped_busy": t.SkippedBusy, "lost_at_source": t.LostAtSource} {
			ch <- prometheus.MustNewConstMetric(descTopicDropped, prometheus.CounterValue, float64(v), name, cause)
		}
		ch <- prometheus.MustNewConstMetric(descTopicEvicted, prometheus.CounterValue, float64(t.EvictedAge), name, "age")
		ch <- prometheus.MustNewConstMetric(descTopicEvicted, prometheus.CounterValue, float64(t.EvictedSize), name, "size")
	}
	ch <- prometheus.MustNewConstMetric(descArena, prometheus.GaugeValue, float64(st.Arena.Used), "used")
	ch <- prometheus.MustNewConstMetric(descArena, prometheus.GaugeValue, float64(st.Arena.Total-st.Arena.Used), "free")
	ch <- prometheus.MustNewConstMetric(descDumps, prometheus.CounterValue, float64(st.Dumps.Written), "written")
	ch <- prometheus.MustNewConstMetric(descDumps, prometheus.CounterValue, float64(st.Dumps.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(descDumps, prometheus.CounterValue, float64(st.Dumps.RefusedDisk), "refused_low_disk")
	ch <- prometheus.MustNewConstMetric(descDumps, prometheus.CounterValue, float64(st.Dumps.Rotated), "rotated")
	ch <- prometheus.MustNewConstMetric(descDumpLate, prometheus.CounterValue, float64(st.Dumps.Late))
	ch <- prometheus.MustNewConstMetric(descDumpRewritten, prometheus.CounterValue, float64(st.Dumps.Rewritten))
	ch <- prometheus.MustNewConstMetric(descTriggers, prometheus.CounterValue, float64(st.Dumps.Coalesced), "coalesced")
	ch <- prometheus.MustNewConstMetric(descTriggers, prometheus.CounterValue, float64(st.Dumps.RateLimited), "rate_limited")
	ch <- prometheus.MustNewConstMetric(descTriggers, prometheus.CounterValue, float64(st.Dumps.ManualRateLimited), "manual_rate_limited")
	ch <- prometheus.MustNewConstMetric(descTriggers, prometheus.CounterValue, float64(st.Dumps.ManualRefused), "manual_refused")
	ch <- prometheus.MustNewConstMetric(descTriggers, prometheus.CounterValue, float64(st.Dumps.RuleRefused), "rule_refused")
	for _, r := range st.Rules {
		ch <- prometheus.MustNewConstMetric(descRuleTriggers, prometheus.CounterValue, float64(r.TriggersFired), r.Name)
		dis := 0.0
		if r.Disabled {
			dis = 1
		}
		ch <- prometheus.MustNewConstMetric(descRuleDisabled, prometheus.GaugeValue, dis, r.Name)
		stuck := 0.0
		if r.Stuck {
			stuck = 1
		}
		ch <- prometheus.MustNewConstMetric(descRuleCall, prometheus.GaugeValue, float64(r.CallNs)/1e9, r.Name)
		ch <- prometheus.MustNewConstMetric(descRuleStuck, prometheus.GaugeValue, stuck, r.Name)
	}
	for _, s := range st.Sources {
		ch <- prometheus.MustNewConstMetric(descSourceLost, prometheus.CounterValue, float64(s.Lost), s.Kind, s.Name)
		if s.Kind == "shm" {
			ch <- prometheus.MustNewConstMetric(descLeftoverSegs, prometheus.CounterValue, float64(s.LeftoverSegments), s.Kind, s.Name)
			ch <- prometheus.MustNewConstMetric(descLeftoverMsgs, prometheus.CounterValue, float64(s.LeftoverMessages), s.Kind, s.Name)
			ch <- prometheus.MustNewConstMetric(descRefusedSegs, prometheus.GaugeValue, float64(s.RefusedSegments), s.Kind, s.Name)
		}
	}
	collectUpload(ch, st.Upload)
}
