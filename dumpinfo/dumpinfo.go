package dumpinfo

import "encoding/json"

// MetadataName is the metadata section (pack) or record name (MCAP) under
// which a dump stores its Info, as JSON.
const MetadataName = "edr.dump_info"

// Who triggered a dump (Trigger.Source).
const (
	SourceAPI     = "api"     // a Go program called the recorder directly
	SourceLua     = "lua"     // a Lua rule fired (Trigger.Rule names it)
	SourceSignal  = "signal"  // SIGUSR1
	SourceCommand = "command" // the control socket ("edr-lite trigger")
	SourceLive    = "live"    // a live client published on a trigger topic (docs/live.md)
)

// How a trigger's time was chosen (Trigger.At).
const (
	// AtNow (the empty string): TimeNs is the instant the trigger was asked
	// for, or the message time a rule fired at.
	AtNow = ""
	// AtLast: TimeNs is the capture time of the newest message of the
	// selected topics when the trigger was asked (RequestedNs), so a dump
	// asked for after the producers went silent holds their last window.
	AtLast = "last"
)

// Why a topic's held window is shorter than the window asked for
// (TopicAccount.StartShort, TopicAccount.EndShort).
const (
	// ShortNotRecorded: the topic was not recorded yet when the window
	// began (it was discovered, or the recorder started, after From).
	ShortNotRecorded = "not_recorded"
	// ShortOverwritten: messages of the window were evicted by the ring's
	// byte cap (or overwritten while the dump read them) before they
	// could be dumped.
	ShortOverwritten = "overwritten"
	// ShortOffline: the producer went offline before the window ended.
	ShortOffline = "producer_offline"
	// ShortStopped: the recorder stopped before the window ended; the dump
	// holds what was recorded until then.
	ShortStopped = "recorder_stopped"
)

// Labels a dump may carry in Info.Labels.
const (
	// DropsUpperBoundLabel lists (comma-separated) the topics whose
	// Oversize, SkippedBusy or LostAtSource count is an upper bound rather
	// than exact: a burst of drops the recorder no longer times one by one
	// (more than a few distinct drop times) straddles the window's edge, and
	// all of it is counted. Without the label every count is exact.
	DropsUpperBoundLabel = "edr.drops_upper_bound"
	// StartLostLabel lists (comma-separated) the topics whose window start
	// was overwritten (ring byte cap) before the recorder could find it:
	// their Overwritten counts only the messages lost while the dump read
	// the ring, a lower bound. Without the label every Overwritten is
	// exact: every message of the window that is not in the dump, whether
	// evicted before the dump or overwritten while it was read.
	StartLostLabel = "edr.window_start_lost"
)

// Info makes a dump self-describing: why it was written and what each topic
// contributed. Pack files store it as JSON in the metadata section named
// MetadataName, MCAP files as metadata records (see pack/FORMAT.md and
// docs/mcap.md for the field names).
type Info struct {
	Triggers  []Trigger         `json:"triggers,omitempty"`
	Topics    []TopicAccount    `json:"topics,omitempty"`
	Writer    string            `json:"writer,omitempty"`     // program and version that wrote the dump
	Host      string            `json:"host,omitempty"`       // machine name
	StartNs   int64             `json:"start_ns,omitempty"`   // start of the dumped window
	EndNs     int64             `json:"end_ns,omitempty"`     // end of the dumped window
	CreatedNs int64             `json:"created_ns,omitempty"` // when the dump was written
	Labels    map[string]string `json:"labels,omitempty"`     // free-form (vehicle id, build, ...)
	// Cut is set when the dump is a cut of other dumps (edr-lite filter,
	// split, or a reading verb given a selection): what was kept of which
	// files. nil for a dump written by the recorder.
	Cut *Cut `json:"cut,omitempty"`
}

// Cut says a dump holds part of other dumps, and what was left out. The
// Info's Topics then count the messages of the cut (Messages, Bytes,
// FirstNs, LastNs) and what the cut left out of each (TopicAccount.Cut);
// their loss counts (Overwritten, Oversize, SkippedBusy, LostAtSource) are
// the inputs', over the inputs' windows: an upper bound for the cut's
// window.
type Cut struct {
	Of []string `json:"of"` // base names of the files cut, in input order
	// FromNs and ToNs bound the window kept, both included (the earliest
	// and latest message time of the inputs when the cut did not bound it).
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	// Topics and Exclude are the topic globs of the selection.
	Topics  []string `json:"topics,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// AroundTrigger is the id of the trigger the window was taken around
	// (filter --around-trigger), 0 when none.
	AroundTrigger uint64 `json:"around_trigger,omitempty"`
	// Part numbers the files of a split from 1; 0 when not split.
	Part int `json:"part,omitempty"`
	// Messages counts the messages the inputs hold and this file does not.
	Messages uint64 `json:"messages"`
	// DroppedTopics lists the inputs' topics of which nothing was kept.
	DroppedTopics []string `json:"dropped_topics,omitempty"`
	// DroppedTriggers counts the inputs' triggers whose time lies outside
	// the window (they are not in Triggers).
	DroppedTriggers int `json:"dropped_triggers,omitempty"`
}

// Trigger is one trigger that caused (or joined) a dump: the record every
// room shares (the recorder writes it, pack and MCAP store it, rules fire
// it, replay compares it).
type Trigger struct {
	ID       uint64 `json:"id"`
	Reason   string `json:"reason"`
	Source   string `json:"source,omitempty"` // one of the Source constants
	Rule     string `json:"rule,omitempty"`   // rule name when Source is SourceLua
	Tag      string `json:"tag,omitempty"`
	Severity int    `json:"severity,omitempty"`
	TimeNs   int64  `json:"time_ns"`
	// PreNs and PostNs are overrides: the windows the trigger asked for
	// instead of the topics' own, when PreSet / PostSet say it set them
	// (zero is then a zero window). They are not the trigger's window
	// (FromNs, ToNs are): a trigger that set none leaves them 0 and they
	// are left out of the JSON. Dumps written before PreSet and PostSet
	// existed leave them false and mean "the topics' own windows" by 0
	// (Decode sets PreSet / PostSet for a non-zero one).
	PreNs   int64             `json:"pre_ns"`
	PostNs  int64             `json:"post_ns"`
	PreSet  bool              `json:"pre_set,omitempty"`
	PostSet bool              `json:"post_set,omitempty"`
	Params  map[string]string `json:"params,omitempty"`
	// FromNs and ToNs bound the window this trigger selected (capture
	// time): the union over its topics of [TimeNs-pre, TimeNs+post], each
	// topic's pre and post being its own or the trigger's override. This
	// is the trigger's effective window, the one every consumer reads
	// (Window); a dump that several triggers joined records each one's
	// own. Dumps written before they existed lack them; Decode derives
	// them where the dump says enough (Normalize).
	FromNs int64 `json:"from_ns,omitempty"`
	ToNs   int64 `json:"to_ns,omitempty"`
	// At says how TimeNs was chosen (AtNow or AtLast); RequestedNs is when
	// the trigger was asked for, set when it differs from TimeNs.
	At          string `json:"at,omitempty"`
	RequestedNs int64  `json:"requested_ns,omitempty"`
}

// Pre returns the pre window the trigger asked for and whether it set one
// (reading dumps of either generation; see PreNs): an override, not the
// trigger's window (Window is).
func (t *Trigger) Pre() (int64, bool) { return t.PreNs, t.PreSet || t.PreNs != 0 }

// Post returns the post window the trigger asked for and whether it set
// one (see PreNs).
func (t *Trigger) Post() (int64, bool) { return t.PostNs, t.PostSet || t.PostNs != 0 }

// Window returns the trigger's effective window [from, to] (capture time,
// both included: FromNs, ToNs) and, relative to its time, its effective
// pre and post (TimeNs-FromNs, ToNs-TimeNs). Without FromNs and ToNs (a
// dump of an older writer, not normalized) the window is that of the
// overrides when the trigger set both; else ok is false: the dump does not
// say (see Normalize).
func (t *Trigger) Window() (from, to, pre, post int64, ok bool) {
	if t.FromNs == 0 && t.ToNs == 0 {
		pre, preOK := t.Pre()
		post, postOK := t.Post()
		if !preOK || !postOK {
			return 0, 0, 0, 0, false
		}
		return t.TimeNs - pre, t.TimeNs + post, pre, post, true
	}
	return t.FromNs, t.ToNs, t.TimeNs - t.FromNs, t.ToNs - t.TimeNs, true
}

// MarshalJSON writes the trigger with pre_ns / post_ns only when it set
// them (Pre, Post): a 0 in pre_ns is then a zero window the trigger asked
// for, never "not set", and the effective window is from_ns / to_ns.
// Readers of either generation read the result alike.
func (t Trigger) MarshalJSON() ([]byte, error) {
	out := triggerJSON{ID: t.ID, Reason: t.Reason, Source: t.Source, Rule: t.Rule, Tag: t.Tag, Severity: t.Severity,
		TimeNs: t.TimeNs, PreSet: t.PreSet, PostSet: t.PostSet, Params: t.Params, FromNs: t.FromNs, ToNs: t.ToNs, At: t.At,
		RequestedNs: t.RequestedNs}
	if v, ok := t.Pre(); ok {
		out.PreNs = &v
	}
	if v, ok := t.Post(); ok {
		out.PostNs = &v
	}
	return json.Marshal(out)
}

// triggerJSON is Trigger as MarshalJSON writes it: the same fields in the
// same order (TestTriggerJSONFields), the overrides left out when not set.
type triggerJSON struct {
	ID          uint64            `json:"id"`
	Reason      string            `json:"reason"`
	Source      string            `json:"source,omitempty"`
	Rule        string            `json:"rule,omitempty"`
	Tag         string            `json:"tag,omitempty"`
	Severity    int               `json:"severity,omitempty"`
	TimeNs      int64             `json:"time_ns"`
	PreNs       *int64            `json:"pre_ns,omitempty"`
	PostNs      *int64            `json:"post_ns,omitempty"`
	PreSet      bool              `json:"pre_set,omitempty"`
	PostSet     bool              `json:"post_set,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	FromNs      int64             `json:"from_ns,omitempty"`
	ToNs        int64             `json:"to_ns,omitempty"`
	At          string            `json:"at,omitempty"`
	RequestedNs int64             `json:"requested_ns,omitempty"`
}

// Normalize completes what a dump of an older writer leaves out, so that
// every consumer reads one truth: PreSet / PostSet for a non-zero
// override, and each trigger's window (FromNs, ToNs) where the dump says
// enough: from both overrides, else, for the one trigger of a dump that is
// not a cut, the dump's window (StartNs, EndNs: the window the trigger
// selected). A trigger of which neither is known keeps no window. Decode
// calls it.
func (d *Info) Normalize() {
	for i := range d.Triggers {
		t := &d.Triggers[i]
		t.PreSet = t.PreSet || t.PreNs != 0
		t.PostSet = t.PostSet || t.PostNs != 0
		if from, to, _, _, ok := t.Window(); ok {
			t.FromNs, t.ToNs = from, to
			continue
		}
		switch {
		case len(d.Triggers) == 1 && d.Cut == nil && d.EndNs > d.StartNs && d.StartNs <= t.TimeNs && t.TimeNs <= d.EndNs:
			t.FromNs, t.ToNs = d.StartNs, d.EndNs
		}
	}
}

// TopicAccount is one topic's accounting for the dumped window.
type TopicAccount struct {
	Topic       string `json:"topic"`
	Type        string `json:"type,omitempty"`
	Messages    uint64 `json:"messages"`
	Bytes       uint64 `json:"bytes"`
	Overwritten uint64 `json:"overwritten,omitempty"`  // lost to ring overwrite while reading
	Oversize    uint64 `json:"oversize,omitempty"`     // dropped: larger than max_packet
	SkippedBusy uint64 `json:"skipped_busy,omitempty"` // dropped: ring busy
	// LostAtSource: lost before reaching the recorder (a shared-memory
	// producer overwrote them unread, the kernel dropped them).
	LostAtSource uint64 `json:"lost_at_source,omitempty"`
	// FirstNs and LastNs are the capture times of the first and last
	// message dumped: the window actually held.
	FirstNs int64 `json:"first_ns,omitempty"`
	LastNs  int64 `json:"last_ns,omitempty"`
	// WindowFromNs and WindowToNs are the window asked for this topic
	// (capture time; the union of its triggers' windows). 0 in dumps
	// written before they existed.
	WindowFromNs int64 `json:"window_from_ns,omitempty"`
	WindowToNs   int64 `json:"window_to_ns,omitempty"`
	// StartShort and EndShort say why the held window starts after
	// WindowFromNs / ends before WindowToNs, when the recorder knows a
	// cause (a Short* constant); "" when it does not fall short or no
	// cause is known (a silent or slow topic).
	StartShort string `json:"start_short,omitempty"`
	EndShort   string `json:"end_short,omitempty"`
	// Cut: in a cut of other dumps (Info.Cut), the topic's messages the
	// inputs hold and this file does not.
	Cut uint64 `json:"cut,omitempty"`
	// Order is how the topic's messages are ordered in the file: "" for
	// capture order (or the dump-wide producer-time reorder), OrderEvent
	// for the topic's event time (a field of its messages) through the
	// bounded reorder stage (dump.EventOrder).
	Order string `json:"order,omitempty"`
	// Late counts, with Order = OrderEvent, the messages that arrived too
	// late for the reorder stage's bound and were written in arrival
	// order: exactly the messages whose event time is below that of a
	// message of the topic before them in the file.
	Late uint64 `json:"late,omitempty"`
	// EventTimeMissing counts, with Order = OrderEvent, the messages whose
	// event time could not be read (written in arrival order).
	EventTimeMissing uint64 `json:"event_time_missing,omitempty"`
	// EventTime and EventTimeUnit are, with Order = OrderEvent, the field
	// of the topic's schema that holds its event time and its unit (as
	// schema.NewEventTime takes them), so offline verbs read the same time.
	EventTime     string `json:"event_time,omitempty"`
	EventTimeUnit string `json:"event_time_unit,omitempty"`
	// EventFirstNs and EventLastNs are, with Order = OrderEvent, the least
	// and greatest event time of the topic's messages (Unix ns, read from
	// EventTime); 0 when no message had one, and in dumps written before
	// they existed.
	EventFirstNs int64 `json:"event_first_ns,omitempty"`
	EventLastNs  int64 `json:"event_last_ns,omitempty"`
	// CAN is, for a CAN frame topic decoded by a DBC, what the DBC made of
	// its frames in the dump; nil for other topics and in dumps written
	// before it existed. In a cut, the inputs' figures (like the losses).
	CAN *CANAccount `json:"can,omitempty"`
}

// OrderEvent is TopicAccount.Order for a topic written in event-time
// order.
const OrderEvent = "event"
