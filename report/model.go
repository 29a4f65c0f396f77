package report

import (
	"encoding/json"
	"strconv"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// Version is the version of the Report document (the JSON of
// "edr-lite report --format json"). It changes when a field changes
// meaning or goes away; new fields may appear without a change.
const Version = 1

// Report is the analysis of one or more dumps (or of the live recorder's
// rings): what the HTML page draws and what --format json prints. Field
// names are documented in docs/report.md. Times are ns since the UNIX
// epoch; durations ns.
type Report struct {
	Version int    `json:"version"`
	Title   string `json:"title"`
	// Live is set for the live recorder's page (no dump, no trigger).
	Live bool `json:"live,omitempty"`
	// StartNs and EndNs bound the time axis of every plot: the messages,
	// the dumps' windows and the triggers' asked windows, cut to
	// --from / --to.
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// FocusNs is the time plots are labelled from ("T+1.5s") and the
	// camera strip centres on: the first trigger, else the end of a live
	// window, else the start.
	FocusNs  int64              `json:"focus_ns"`
	Files    []File             `json:"files"`
	Triggers []dumpinfo.Trigger `json:"triggers"`
	Topics   []Topic            `json:"topics"`
	// Signals are the plotted numeric fields, grouped by topic in topic
	// order, fields in schema order.
	Signals []Signal `json:"signals"`
	// Cameras are the image and video topics with their thumbnails.
	Cameras []Camera `json:"cameras"`
	// Notes say what the report left out and why (a field cap reached, a
	// schema that did not build, ...).
	Notes []string `json:"notes,omitempty"`
	// Unmatched names each option that names what the dumps do not hold
	// (an Options.Fields entry that plots nothing, an Options.Schemas
	// topic that is not there), also in Notes; edr-lite report prints
	// them as warnings.
	Unmatched []string `json:"unmatched_options,omitempty"`
}

// File is one input dump's facts.
type File struct {
	Path        string   `json:"path"`
	Format      string   `json:"format"`
	Size        int64    `json:"size"`
	Indexed     bool     `json:"indexed"`
	Compression []string `json:"compression,omitempty"`
	// StoredBytes / RawBytes is the codec ratio (pack: frame data as
	// stored and uncompressed); 0 when unknown.
	StoredBytes int64  `json:"stored_bytes,omitempty"`
	RawBytes    int64  `json:"raw_bytes,omitempty"`
	Writer      string `json:"writer,omitempty"`
	Messages    uint64 `json:"messages"`
	// Verify is "ok", "not checked", or the problems found (see
	// edr-lite verify), first ones first.
	Verify   string   `json:"verify"`
	Problems []string `json:"problems,omitempty"`
}

// Topic is one topic's timeline, timing analysis and accounting.
type Topic struct {
	Name string `json:"name"` // "name" or "name#channel"
	Type string `json:"type,omitempty"`
	// Decoded says how its payloads were read: "" (not decoded), or the
	// message encoding of the schema used and where it came from
	// ("x-edr-packed from --schema", "protobuf from the dump").
	Decoded string `json:"decoded,omitempty"`
	// Messages and Bytes are what the report read in [StartNs, EndNs].
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	FirstNs  int64  `json:"first_ns,omitempty"`
	LastNs   int64  `json:"last_ns,omitempty"`
	// AskedFromNs / AskedToNs: the window asked for the topic, as the
	// dump recorded it (its triggers' windows with the topic's own pre and
	// post), else the union of the triggers' [time-pre, time+post]; 0
	// when no trigger.
	AskedFromNs int64  `json:"asked_from_ns,omitempty"`
	AskedToNs   int64  `json:"asked_to_ns,omitempty"`
	Timing      Timing `json:"timing"`
	// Bins count messages per time bin over [StartNs, EndNs] (BinNs wide,
	// the last one may be shorter): the timeline lane. A slow topic's bins
	// are wider, so that they hold MinPerBin messages on average.
	BinNs int64    `json:"bin_ns"`
	Bins  []uint32 `json:"bins"`
	// Gaps are the largest inter-arrival gaps longer than GapFactor times
	// the median interval, largest first.
	Gaps       []Gap      `json:"gaps,omitempty"`
	Accounting Accounting `json:"accounting"`
}

// Timing is a topic's timing analysis (docs/report.md, "Timing").
type Timing struct {
	// RateHz is (messages-1) / (last - first), less the gaps that lie
	// between the triggers' windows (a merge of dumps: nothing was
	// recorded there) and their intervals; BetweenWindowsNs is the time
	// so left out.
	RateHz           float64 `json:"rate_hz"`
	BetweenWindowsNs int64   `json:"between_windows_ns,omitempty"`
	// Interval is the time between consecutive capture times.
	Interval Dist `json:"interval"`
	// Jitter is |interval - median interval|.
	Jitter Dist `json:"jitter"`
	// Latency is capture time - producer time, for messages that have a
	// producer time (Latency.Count of them); negative when the producer's
	// clock is ahead of the recorder's.
	Latency Dist `json:"latency"`
	// OutOfOrder counts messages whose producer time is earlier than the
	// previous message's of the topic; CaptureBackwards those whose
	// capture time is (never in edr-lite dumps; possible in other files).
	OutOfOrder       uint64 `json:"out_of_order"`
	CaptureBackwards uint64 `json:"capture_backwards"`
	// LargestGapNs is the longest interval and LargestGapAtNs its start.
	LargestGapNs   int64 `json:"largest_gap_ns"`
	LargestGapAtNs int64 `json:"largest_gap_at_ns,omitempty"`
}

// Dist summarises a distribution of durations in ns: exact count, min,
// max and mean; quantiles within 0.1% (Hist).
type Dist struct {
	Count uint64  `json:"count"`
	Min   int64   `json:"min_ns"`
	P50   int64   `json:"p50_ns"`
	P99   int64   `json:"p99_ns"`
	Max   int64   `json:"max_ns"`
	Mean  float64 `json:"mean_ns"`
}

// Gap is one inter-arrival gap: no message of the topic from AtNs for
// DurationNs.
type Gap struct {
	AtNs       int64 `json:"at_ns"`
	DurationNs int64 `json:"duration_ns"`
}

// Accounting is a topic's losses as the dump (or the live recorder)
// counted them: dumpinfo.TopicAccount.
type Accounting struct {
	Messages     uint64 `json:"messages"`
	Bytes        uint64 `json:"bytes"`
	Overwritten  uint64 `json:"overwritten"`
	LostAtSource uint64 `json:"lost_at_source"`
	Oversize     uint64 `json:"oversize"`
	SkippedBusy  uint64 `json:"skipped_busy"`
	// StartShort and EndShort say why the held window starts after the
	// asked one / ends before it, when the recorder knew (dumpinfo's
	// Short* values: "not_recorded", "overwritten", "producer_offline",
	// "recorder_stopped").
	StartShort string `json:"start_short,omitempty"`
	EndShort   string `json:"end_short,omitempty"`
	// Labels: "drops upper bound", "window start lost" (see dumpinfo).
	Labels []string `json:"labels,omitempty"`
}

// Signal is one plotted numeric field.
type Signal struct {
	Topic string `json:"topic"`
	Field string `json:"field"` // concrete path, "wheel[2]"
	Unit  string `json:"unit,omitempty"`
	// Count is the samples read; NonFinite those that were NaN or
	// infinite (not plotted).
	Count     uint64  `json:"count"`
	NonFinite uint64  `json:"non_finite,omitempty"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	Mean      float64 `json:"mean"`
	// Downsampled: the points are per pixel column (first, min, max,
	// last of each column, so spikes survive); else one per sample.
	Downsampled bool `json:"downsampled"`
	// Points are [time_ns, value] pairs in time order.
	Points []Point `json:"points"`
	// Gaps are the stretches without a sample longer than GapFactor times
	// the topic's median interval, in time order: the line breaks there
	// (no line joins the points on either side) and the page marks them.
	Gaps []Gap `json:"gaps,omitempty"`
	// Values: the field has too few samples to plot (a latched or
	// single-sample topic, at most MaxValueSamples): the page shows its
	// values in a table instead of a chart.
	Values bool `json:"values,omitempty"`
}

// Point is one plotted sample.
type Point struct {
	TimeNs int64
	Value  float64
}

// Camera is one image or video topic's strip of thumbnails.
type Camera struct {
	Topic  string  `json:"topic"`
	Format string  `json:"format"` // "foxglove.CompressedImage", "foxglove.CompressedVideo"
	Frames []Frame `json:"frames"`
}

// Frame is one thumbnail slot: the frame nearest to TargetNs (Side "");
// for a trigger's slots (Trigger, 1-based in Report.Triggers) the last
// frame at or before it (Side "before") or the first after it ("after");
// or a placeholder saying why there is none.
type Frame struct {
	TargetNs int64  `json:"target_ns"`
	Trigger  int    `json:"trigger,omitempty"`
	Side     string `json:"side,omitempty"`
	TimeNs   int64  `json:"time_ns,omitempty"` // capture time of the frame shown
	Format   string `json:"format,omitempty"`  // the message's format: "jpeg", "h264", ...
	Width    int    `json:"width,omitempty"`   // of the source picture
	Height   int    `json:"height,omitempty"`
	// Thumb is the thumbnail, a JPEG; in the HTML as a data: URI, left
	// out of the JSON.
	Thumb []byte `json:"-"`
	// ThumbBytes is len(Thumb).
	ThumbBytes int `json:"thumb_bytes,omitempty"`
	// Missing says why there is no thumbnail ("" when there is one).
	Missing string `json:"missing,omitempty"`
}

// MarshalJSON writes a Point as [time_ns, value].
func (p Point) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 40)
	b = append(b, '[')
	b = strconv.AppendInt(b, p.TimeNs, 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, p.Value, 'g', -1, 64)
	return append(b, ']'), nil
}

// UnmarshalJSON reads [time_ns, value].
func (p *Point) UnmarshalJSON(b []byte) error {
	var v [2]json.Number
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t, err := v[0].Int64()
	if err != nil {
		return err
	}
	f, err := v[1].Float64()
	if err != nil {
		return err
	}
	*p = Point{t, f}
	return nil
}
