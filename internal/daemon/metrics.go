//go:build !ecu || http

package daemon

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/upload"
)

// The Prometheus metrics of /metrics (README.md; docs/can.md, docs/live.md):
// the status, the upload queue's, the CAN buses' and the live server's
// figures, computed at scrape time. Not in the ECU build unless it is
// built with the HTTP stack (-tags ecu,http; nohttp.go, docs/ecu.md).

// metricsHandler serves the status as Prometheus metrics, computed at scrape
// time from one snapshot.
func (d *Daemon) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{d: d})
	reg.MustRegister(&liveCollector{d: d})
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
	descDumpRotated  = prometheus.NewDesc("edr_dump_rotated_total", "Dumps rotation deleted, by the bound each deletion served: max_files, max_total_bytes (after a dump; never one still queued for upload), min_free_disk (before a dump, to make its room).", []string{"reason"}, nil)
	descDumpLeftover = prometheus.NewDesc("edr_dump_leftovers", "Leftovers of dumps an earlier run left interrupted, found at start: kept (renamed NAME.interrupted, for edr-lite recover) or removed (empty).", []string{"state"}, nil)
	descDumpLate     = prometheus.NewDesc("edr_dump_late_messages_total",
		"Messages dumps wrote out of event-time order: later than the event-time reorder stage's bound.", nil, nil)
	descDumpRewritten = prometheus.NewDesc("edr_dump_rewritten_total",
		"Frames or chunks dumps wrote a second time, without the payloads producers overwrote while the writer held them in their rings (those messages are counted lost to readers).", nil, nil)
	descSourceLost   = prometheus.NewDesc("edr_source_lost_total", "Messages a source lost before the recorder could read them.", []string{"kind", "source"}, nil)
	descLeftoverSegs = prometheus.NewDesc("edr_source_leftover_segments_total", "Shared-memory segments found finished (producer closed or dead before the recorder found them): read, counted, not recorded.", []string{"kind", "source"}, nil)
	descLeftoverMsgs = prometheus.NewDesc("edr_source_leftover_messages_total", "Messages in leftover segments, not recorded.", []string{"kind", "source"}, nil)
	descRefusedSegs  = prometheus.NewDesc("edr_source_refused_segments", "Shared-memory segments not followed now: max_topics reached.", []string{"kind", "source"}, nil)
	descReceiving    = prometheus.NewDesc("edr_source_receiving",
		"1 while the source records messages; 0 with the cause (stopped, dir_missing, no_segment, refused, no_data; status says why in words).",
		[]string{"kind", "source", "cause"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTopicWritten, descTopicBytes, descTopicHeld, descTopicRate, descTopicDropped, descTopicEvicted,
		descArena, descDumps, descTriggers, descRuleTriggers, descRuleDisabled, descRuleCall, descRuleStuck, descSourceLost,
		descLeftoverSegs, descLeftoverMsgs, descRefusedSegs, descDumpLate, descDumpRewritten, descDumpRotated, descDumpLeftover, descReceiving} {
		ch <- d
	}
	for _, d := range uploadDescs() {
		ch <- d
	}
	for _, d := range canDescs() {
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
	for _, r := range []string{dump.ReasonMaxFiles, dump.ReasonMaxTotalBytes, dump.ReasonMinFreeDisk} {
		ch <- prometheus.MustNewConstMetric(descDumpRotated, prometheus.CounterValue, float64(st.Dumps.RotatedFor[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descDumpLeftover, prometheus.GaugeValue, float64(len(st.Dumps.LeftoverTmp)), "kept")
	ch <- prometheus.MustNewConstMetric(descDumpLeftover, prometheus.GaugeValue, float64(len(st.Dumps.LeftoverRemoved)), "removed")
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
		recv := 0.0
		if s.Receiving {
			recv = 1
		}
		ch <- prometheus.MustNewConstMetric(descReceiving, prometheus.GaugeValue, recv, s.Kind, s.Name, s.Cause)
		if s.Kind == "shm" {
			ch <- prometheus.MustNewConstMetric(descLeftoverSegs, prometheus.CounterValue, float64(s.LeftoverSegments), s.Kind, s.Name)
			ch <- prometheus.MustNewConstMetric(descLeftoverMsgs, prometheus.CounterValue, float64(s.LeftoverMessages), s.Kind, s.Name)
			ch <- prometheus.MustNewConstMetric(descRefusedSegs, prometheus.GaugeValue, float64(s.RefusedSegments), s.Kind, s.Name)
		}
	}
	collectUpload(ch, st.Upload)
	collectCAN(ch, st.CAN, st.CANCapture)
}

var (
	descUploadQueued = prometheus.NewDesc("edr_upload_queued", "Dumps waiting for upload, by state (queued, uploading, failed).", []string{"state"}, nil)
	descUploadDone   = prometheus.NewDesc("edr_upload_dumps_total", "Dumps the server confirmed since start (uploaded), and queued dumps deleted before their upload (evicted: a new dump needed their room; missing: deleted by someone else).", []string{"outcome"}, nil)
	descUploadEvict  = prometheus.NewDesc("edr_upload_evicted_total", "Queued dumps rotation deleted before their upload, by the bound the deletion served (min_free_disk: a new dump needed the room).", []string{"reason"}, nil)
	descUploadBytes  = prometheus.NewDesc("edr_upload_sent_bytes_total", "Bytes sent to the object store, retries and resends included (what the link carried; only ever grows).", nil, nil)
	descUploadConf   = prometheus.NewDesc("edr_upload_confirmed_bytes_total", "Bytes of the dumps the server confirmed (size and CRC32C) since start.", nil, nil)
	descUploadAside  = prometheus.NewDesc("edr_upload_set_aside_files", "Damaged copies of the upload journal and ledger kept in the dump directory (NAME.bad.N), set aside at a start that could not read them.", nil, nil)
	descUploadPaused = prometheus.NewDesc("edr_upload_paused", "1 while the whole queue waits after a server-wide error (credentials, bucket, TLS, network, server); the kind is the last error's.", []string{"kind"}, nil)
	descUploadError  = prometheus.NewDesc("edr_upload_error", "1 while the last upload attempt failed or the journal cannot be written.", []string{"kind"}, nil)
)

func uploadDescs() []*prometheus.Desc {
	return []*prometheus.Desc{descUploadQueued, descUploadDone, descUploadEvict, descUploadBytes, descUploadConf, descUploadPaused, descUploadAside, descUploadError}
}

func collectUpload(ch chan<- prometheus.Metric, u *upload.Status) {
	if u == nil {
		return
	}
	states := map[string]float64{"queued": 0, "uploading": 0, "failed": 0}
	for _, e := range u.Entries {
		states[e.State]++
	}
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(descUploadQueued, prometheus.GaugeValue, n, s)
	}
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Uploaded), "uploaded")
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Evicted), "evicted")
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Missing), "missing")
	ch <- prometheus.MustNewConstMetric(descUploadEvict, prometheus.CounterValue, float64(u.EvictedFor[dump.ReasonMinFreeDisk]), dump.ReasonMinFreeDisk)
	ch <- prometheus.MustNewConstMetric(descUploadBytes, prometheus.CounterValue, float64(u.SentBytes))
	ch <- prometheus.MustNewConstMetric(descUploadConf, prometheus.CounterValue, float64(u.UploadedBytes))
	ch <- prometheus.MustNewConstMetric(descUploadAside, prometheus.GaugeValue, float64(u.SetAsideFiles))
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(descUploadError, prometheus.GaugeValue, b(u.Failed > 0), "upload")
	ch <- prometheus.MustNewConstMetric(descUploadError, prometheus.GaugeValue, b(u.JournalError != ""), "journal")
	for _, k := range []string{upload.KindCredentials, upload.KindBucket, upload.KindTLS, upload.KindNetwork, upload.KindServer} {
		ch <- prometheus.MustNewConstMetric(descUploadPaused, prometheus.GaugeValue, b(u.Paused != "" && u.LastErrorKind == k), k)
	}
}

// The CAN metrics (docs/can.md, "Accounting").
var (
	descCANFrames = prometheus.NewDesc("edr_can_frames_total", "Frames of a CAN bus, by kind: data (data and remote frames), error, bus_off, restarted (error frames of those classes).",
		[]string{"bus", "kind"}, nil)
	descCANLost      = prometheus.NewDesc("edr_can_lost_total", "Frames of a CAN bus lost before the recorder saw them, as the source says (SocketCAN's kernel drops).", []string{"bus"}, nil)
	descCANDecoded   = prometheus.NewDesc("edr_can_decoded_total", "Frames of a CAN bus decoded by its DBC, by message.", []string{"bus", "message"}, nil)
	descCANUndecoded = prometheus.NewDesc("edr_can_undecodable_total", "Frames of a CAN bus its DBC did not decode, by why: unknown (no message has the ID), short (fewer bytes than the message).",
		[]string{"bus", "why"}, nil)
	descCANCapture = prometheus.NewDesc("edr_can_capture_frames_total", "Ethernet frames of a CAN-over-Ethernet source, by outcome: read, malformed.", []string{"source", "outcome"}, nil)
)

func canDescs() []*prometheus.Desc {
	return []*prometheus.Desc{descCANFrames, descCANLost, descCANDecoded, descCANUndecoded, descCANCapture}
}

func collectCAN(ch chan<- prometheus.Metric, buses []CANBusStatus, caps []CANCaptureStatus) {
	c := prometheus.CounterValue
	for _, b := range buses {
		for kind, v := range map[string]uint64{"data": b.Frames, "error": b.ErrorFrames, "bus_off": b.BusOff, "restarted": b.Restarts} {
			ch <- prometheus.MustNewConstMetric(descCANFrames, c, float64(v), b.Topic, kind)
		}
		ch <- prometheus.MustNewConstMetric(descCANLost, c, float64(b.Lost), b.Topic)
		for m, n := range b.Messages {
			ch <- prometheus.MustNewConstMetric(descCANDecoded, c, float64(n), b.Topic, m)
		}
		ch <- prometheus.MustNewConstMetric(descCANUndecoded, c, float64(b.Unknown), b.Topic, "unknown")
		ch <- prometheus.MustNewConstMetric(descCANUndecoded, c, float64(b.Short), b.Topic, "short")
	}
	for _, s := range caps {
		ch <- prometheus.MustNewConstMetric(descCANCapture, c, float64(s.Frames-s.Malformed), s.Source, "read")
		ch <- prometheus.MustNewConstMetric(descCANCapture, c, float64(s.Malformed), s.Source, "malformed")
	}
}
