package engine

import (
	"fmt"
	"path"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// Defaults applied by Config.withDefaults, from the one table of defaults
// (internal/defaults/defaults.go).
const (
	DefaultMaxTopics    = defaults.MaxTopics
	DefaultTopicBytes   = defaults.TopicBytes
	DefaultPre          = defaults.Pre
	DefaultPost         = defaults.Post
	DefaultGuard        = defaults.Guard
	DefaultMinRingBytes = defaults.MinRingBytes
)

// Config configures a Recorder. A nil window (Pre, Post, Guard) means its
// default and a zero one means zero; for the other fields the zero value
// means the default documented on the field. New validates the whole
// struct and names the first bad field.
type Config struct {
	// CacheSize is the arena size in bytes: the memory every ring lives in.
	CacheSize int64
	// LockMemory mlocks the cache so recorded data is never paged out.
	LockMemory bool
	// Clock stamps capture times for Ingest and Now (and drives dump
	// scheduling). nil means the system clock, read at every call: a
	// source reads it once per batch (ARCHITECTURE.md, "Time").
	Clock clock.Clock
	// MaxTopics bounds the topic table (DefaultMaxTopics when 0).
	MaxTopics int

	// Pre and Post are the default windows before and after a trigger
	// (DefaultPre, DefaultPost when nil; zero is zero).
	Pre, Post *time.Duration
	// Guard pads both window boundaries (DefaultGuard when nil; zero is
	// no guard).
	Guard *time.Duration
	// TopicBytes is the default byte cap of one topic's ring. It is
	// rounded down to a power of two (the ring never holds more).
	TopicBytes int64
	// MaxPacket is the default largest message accepted (0 = what fits).
	MaxPacket int
	// KeepLast is the default number of a topic's newest messages kept
	// even when older than the retention.
	KeepLast int

	// Include and Exclude are globs (path.Match syntax) over the topic name
	// and over "name#channel". A topic is recorded when it matches an
	// Include glob (or Include is empty) and no Exclude glob.
	Include, Exclude []string
	// Topics are per-topic overrides; the first whose Match glob matches
	// the topic applies.
	Topics []TopicOverride

	// BusySkipData drops incoming messages while a dump is being written
	// (counted per topic as SkippedBusy and in each dump's accounting),
	// trading time holes for CPU on a weak ECU. Off by default: dumps never
	// pause recording.
	BusySkipData bool

	// DestroyOnOffline returns an offline topic's ring to the arena once
	// no Reader or pending dump needs it.
	DestroyOnOffline bool

	// CheckType checks the type a topic is to be recorded under (its
	// declared type or a TopicOverride's), once per Discover, off the
	// ingest path; info.Type is that type. An error makes the recorder
	// record the topic as raw bytes (ingest.Raw of the schema name) and
	// keep the error in TopicStatus.TypeErr. nil means ingest.Type.Validate
	// (structure only; the daemon passes schema.Check, which also parses
	// layouts and descriptors). A topic that declares no type is raw and
	// not checked.
	CheckType func(info ingest.TopicInfo) error
}

// TopicOverride overrides defaults for the topics its Match glob selects.
// A nil window keeps the recorder's (zero is zero); zero MaxPacket,
// MaxBytes and KeepLast keep the recorder's.
type TopicOverride struct {
	Match string
	// Pre and Post replace the recorder's windows for these topics.
	Pre, Post *time.Duration
	MaxPacket int
	MaxBytes  int64
	// OnlyFront records only the pre window of this topic in dumps;
	// OnlyBack only the post window.
	OnlyFront, OnlyBack bool
	KeepLast            int
	// Disabled leaves matching topics out entirely.
	Disabled bool
	// Type, when not zero, is the type matching topics are recorded under,
	// whatever their source declared (a UDP listener's payloads, a
	// producer that declares none or a wrong one).
	Type ingest.Type
}

// topicSettings are the resolved settings of one topic.
type topicSettings struct {
	pre, post           int64
	onlyFront, onlyBack bool
	ring                ringConfig
	ringBytes           int
}

// validate checks c, assuming defaults are applied, and returns a
// *ConfigError naming the first bad field.
func (c *Config) validate() error {
	if c.CacheSize <= 0 {
		return configErr("CacheSize", "must be > 0, got %d", c.CacheSize)
	}
	if c.MaxTopics < 0 {
		return configErr("MaxTopics", "must be >= 0, got %d", c.MaxTopics)
	}
	if *c.Pre < 0 || *c.Post < 0 {
		return configErr("Pre/Post", "windows must be >= 0, got %v/%v", *c.Pre, *c.Post)
	}
	if *c.Guard < 0 {
		return configErr("Guard", "must be >= 0, got %v", *c.Guard)
	}
	if c.TopicBytes < DefaultMinRingBytes {
		return configErr("TopicBytes", "must be >= %d, got %d", DefaultMinRingBytes, c.TopicBytes)
	}
	if c.TopicBytes > c.CacheSize {
		return configErr("CacheSize", "%d bytes cannot hold one topic's ring of TopicBytes %d", c.CacheSize, c.TopicBytes)
	}
	if c.MaxPacket < 0 {
		return configErr("MaxPacket", "must be >= 0, got %d", c.MaxPacket)
	}
	if c.KeepLast < 0 {
		return configErr("KeepLast", "must be >= 0, got %d", c.KeepLast)
	}
	for i, g := range c.Include {
		if _, err := path.Match(g, ""); err != nil {
			return configErr(fmt.Sprintf("Include[%d]", i), "bad glob %q: %v", g, err)
		}
	}
	for i, g := range c.Exclude {
		if _, err := path.Match(g, ""); err != nil {
			return configErr(fmt.Sprintf("Exclude[%d]", i), "bad glob %q: %v", g, err)
		}
	}
	for i, o := range c.Topics {
		f := func(name string) string { return fmt.Sprintf("Topics[%d].%s", i, name) }
		if _, err := path.Match(o.Match, ""); err != nil || o.Match == "" {
			return configErr(f("Match"), "bad glob %q", o.Match)
		}
		if o.Pre != nil && *o.Pre < 0 || o.Post != nil && *o.Post < 0 {
			return configErr(f("Pre/Post"), "windows must be >= 0")
		}
		if o.MaxPacket < 0 {
			return configErr(f("MaxPacket"), "must be >= 0, got %d", o.MaxPacket)
		}
		if o.MaxBytes != 0 && o.MaxBytes < DefaultMinRingBytes {
			return configErr(f("MaxBytes"), "must be >= %d, got %d", DefaultMinRingBytes, o.MaxBytes)
		}
		if o.MaxBytes > c.CacheSize {
			return configErr("CacheSize", "%d bytes cannot hold the ring of Topics[%d] (%q), MaxBytes %d", c.CacheSize, i, o.Match, o.MaxBytes)
		}
		if o.KeepLast < 0 {
			return configErr(f("KeepLast"), "must be >= 0, got %d", o.KeepLast)
		}
		if o.OnlyFront && o.OnlyBack {
			return configErr(f("OnlyFront"), "OnlyFront and OnlyBack exclude each other")
		}
		if !o.Type.IsZero() {
			if err := o.Type.Validate(); err != nil {
				return configErr(f("Type"), "%v", err)
			}
		}
	}
	return nil
}

// Validate applies the defaults to a copy of c and checks it, as New does,
// without acquiring anything: the *ConfigError names the first bad field.
func (c Config) Validate() error {
	c = c.withDefaults()
	return c.validate()
}

// withDefaults returns c with unset fields replaced by defaults. The
// windows it sets point to fresh variables, never the caller's.
func (c Config) withDefaults() Config {
	if c.MaxTopics == 0 {
		c.MaxTopics = DefaultMaxTopics
	}
	c.Pre = durationOr(c.Pre, DefaultPre)
	c.Post = durationOr(c.Post, DefaultPost)
	c.Guard = durationOr(c.Guard, DefaultGuard)
	if c.TopicBytes == 0 {
		c.TopicBytes = DefaultTopicBytes
		if c.TopicBytes > c.CacheSize && c.CacheSize >= DefaultMinRingBytes {
			c.TopicBytes = c.CacheSize
		}
	}
	return c
}

// matchTopic reports whether glob g selects the topic.
func matchTopic(g string, info *ingest.TopicInfo) bool {
	if ok, _ := path.Match(g, info.Name); ok {
		return true
	}
	if info.Channel != "" {
		ok, _ := path.Match(g, info.Name+"#"+info.Channel)
		return ok
	}
	return false
}

// durationOr returns a pointer to a copy of *p, or to def when p is nil.
func durationOr(p *time.Duration, def time.Duration) *time.Duration {
	if p != nil {
		return new(*p)
	}
	return new(def)
}

// maxPost is the largest post window over the defaults and overrides.
func (c *Config) maxPost() time.Duration {
	m := *c.Post
	for _, o := range c.Topics {
		if o.Post != nil && *o.Post > m {
			m = *o.Post
		}
	}
	return m
}

// settingsFor resolves a topic's settings, or ErrExcluded.
func (c *Config) settingsFor(info *ingest.TopicInfo) (topicSettings, error) {
	if len(c.Include) > 0 {
		in := false
		for _, g := range c.Include {
			if matchTopic(g, info) {
				in = true
				break
			}
		}
		if !in {
			return topicSettings{}, fmt.Errorf("%w: %q matches no Include glob", ErrExcluded, info.Name)
		}
	}
	for _, g := range c.Exclude {
		if matchTopic(g, info) {
			return topicSettings{}, fmt.Errorf("%w: %q matches Exclude glob %q", ErrExcluded, info.Name, g)
		}
	}
	s := topicSettings{
		pre:       int64(*c.Pre),
		post:      int64(*c.Post),
		ringBytes: floorPow2(c.TopicBytes),
		ring:      ringConfig{maxPacket: c.MaxPacket, keepLast: uint64(c.KeepLast)},
	}
	for _, o := range c.Topics {
		if !matchTopic(o.Match, info) {
			continue
		}
		if o.Disabled {
			return topicSettings{}, fmt.Errorf("%w: %q disabled by Topics override %q", ErrExcluded, info.Name, o.Match)
		}
		if o.Pre != nil {
			s.pre = int64(*o.Pre)
		}
		if o.Post != nil {
			s.post = int64(*o.Post)
		}
		if o.MaxPacket > 0 {
			s.ring.maxPacket = o.MaxPacket
		}
		if o.MaxBytes > 0 {
			s.ringBytes = floorPow2(o.MaxBytes)
		}
		if o.KeepLast > 0 {
			s.ring.keepLast = uint64(o.KeepLast)
		}
		s.onlyFront, s.onlyBack = o.OnlyFront, o.OnlyBack
		break
	}
	// Constant retention: pre_u + max_post + 2*guard (ARCHITECTURE.md, "Retention").
	s.ring.retentionNs = s.pre + int64(c.maxPost()) + 2*int64(*c.Guard)
	if s.ring.retentionNs == 0 {
		s.ring.retentionNs = 1 // every window zero: keep the newest only (0 would mean no age limit)
	}
	return s, nil
}

// floorPow2 returns the largest power of two <= n (n >= 1).
func floorPow2(n int64) int {
	p := int64(1)
	for p*2 <= n {
		p *= 2
	}
	return int(p)
}
