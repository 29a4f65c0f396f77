package dumpinfo

// MetadataName is the metadata section (pack) or record name (MCAP) under
// which a dump stores its Info, as JSON.
const MetadataName = "edr.dump_info"

// Who triggered a dump (Trigger.Source).
const (
	SourceAPI     = "api"     // a Go program called the recorder directly
	SourceLua     = "lua"     // a Lua rule fired (Trigger.Rule names it)
	SourceSignal  = "signal"  // SIGUSR1
	SourceCommand = "command" // the control socket ("edr-lite trigger")
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
	ID       uint64            `json:"id"`
	Reason   string            `json:"reason"`
	Source   string            `json:"source,omitempty"` // one of the Source constants
	Rule     string            `json:"rule,omitempty"`   // rule name when Source is SourceLua
	Tag      string            `json:"tag,omitempty"`
	Severity int               `json:"severity,omitempty"`
	TimeNs   int64             `json:"time_ns"`
	PreNs    int64             `json:"pre_ns"`
	PostNs   int64             `json:"post_ns"`
	Params   map[string]string `json:"params,omitempty"`
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
	FirstNs      int64  `json:"first_ns,omitempty"`
	LastNs       int64  `json:"last_ns,omitempty"`
	// Cut: in a cut of other dumps (Info.Cut), the topic's messages the
	// inputs hold and this file does not.
	Cut uint64 `json:"cut,omitempty"`
}
