package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/suggest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/upload"
)

// ErrInvalid is wrapped by every error about the content of a configuration.
var ErrInvalid = errors.New("config: invalid configuration")

// Problem is one thing wrong in a configuration file, printed as
// "FILE:LINE: key: what" (compiler style; "FILE: key: what" when the key
// has no line, e.g. a default the file does not set).
type Problem struct {
	File string
	Line int
	Key  string // "recorder.cache_size", "rule[1].params.topik"; "" for the file
	Msg  string
}

func (p *Problem) Error() string {
	loc := p.File
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line)
	}
	if p.Key == "" {
		return loc + ": " + p.Msg
	}
	return loc + ": " + p.Key + ": " + p.Msg
}

func (p *Problem) Unwrap() error { return ErrInvalid }

// Errors is every problem found in one file, in line order; its Error is
// one problem per line. It matches ErrInvalid.
type Errors []*Problem

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, p := range e {
		out[i] = p
	}
	return out
}

// Sorted returns e ordered by line (problems without a line last, in the
// order found).
func (e Errors) Sorted() Errors {
	out := append(Errors(nil), e...)
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := out[i].Line, out[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	return out
}

// MaxProblems bounds the problems one check reports: a file of a million
// bytes of unknown keys is 40 000 of them, which nobody reads.
const MaxProblems = 100

// Capped returns e (sorted) with at most n problems, the rest counted in
// one last problem.
func (e Errors) Capped(n int) Errors {
	if len(e) <= n {
		return e
	}
	out := append(Errors(nil), e[:n]...)
	return append(out, &Problem{File: e[0].File, Msg: fmt.Sprintf("and %d more problems, not shown: fix these first", len(e)-n)})
}

// Limits of the tables a file may hold: each rule is a Lua state to load,
// each source a socket or directory to follow, each topic table a glob
// every topic is matched against.
const (
	MaxRules        = 1024
	MaxSources      = 256 // of each kind
	MaxTopicOptions = 4096
)

// Problem returns a problem at key (see Problem.Key), located at the line
// that sets key in the file, or the nearest enclosing table that the file
// has.
func (f *File) Problem(key, format string, args ...any) *Problem {
	return &Problem{File: f.name, Line: f.lines.find(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Name returns the name the file was parsed under (its path).
func (f *File) Name() string { return f.name }

// Size is a byte count written as "256MiB", "1GB" or a bare integer.
type Size int64

// UnmarshalTOML implements toml.Unmarshaler.
func (s *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("size %d is negative", x)
		}
		*s = Size(x)
		return nil
	case string:
		n, err := units.ParseSize(x)
		if err != nil {
			return unitsError(err)
		}
		*s = Size(n)
		return nil
	}
	return fmt.Errorf("want a size such as \"256MiB\", got %s", describe(v))
}

// unitsError words an error of package units for the file's reader:
// without the package's prefix ("bad size \"12XB\" (want e.g. ...)").
func unitsError(err error) error {
	if errors.Is(err, units.ErrSyntax) {
		return errors.New("bad " + strings.TrimPrefix(err.Error(), units.ErrSyntax.Error()+": "))
	}
	return err
}

// Duration is a time span written as "15s", "500ms", "2d" or 0.
type Duration time.Duration

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x != 0 {
			return fmt.Errorf("duration %d has no unit (write e.g. \"%ds\")", x, x)
		}
		*d = 0
		return nil
	case string:
		p, err := units.ParseDuration(x)
		if err != nil {
			return unitsError(err)
		}
		if p < 0 {
			return fmt.Errorf("duration %q is negative", x)
		}
		*d = Duration(p)
		return nil
	}
	return fmt.Errorf("want a duration such as \"15s\", got %s", describe(v))
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// File is the whole configuration file.
type File struct {
	Recorder Recorder `toml:"recorder"`
	Rotation Rotation `toml:"rotation"`
	Topics   []Topic  `toml:"topic"`
	Sources  Sources  `toml:"source"`
	Rules    []Rule   `toml:"rule"`
	Control  Control  `toml:"control"`
	Hooks    Hooks    `toml:"hooks"`
	Upload   Upload   `toml:"upload"`
	Live     Live     `toml:"live"`
	Evidence Evidence `toml:"evidence"`

	name  string // as given to Parse, for problems
	lines lineIndex
}

// Recorder holds the recorder-wide settings.
type Recorder struct {
	DumpDir          string   `toml:"dump_dir"`
	CacheSize        Size     `toml:"cache_size"`
	Mlock            bool     `toml:"mlock"`
	Pre              Duration `toml:"pre"`
	Post             Duration `toml:"post"`
	Guard            Duration `toml:"guard"`
	MaxPacket        Size     `toml:"max_packet"`
	TopicBytes       Size     `toml:"topic_bytes"`
	Include          []string `toml:"include"`
	Exclude          []string `toml:"exclude"`
	BusySkipData     bool     `toml:"busy_skip_data"`
	DestroyOnOffline bool     `toml:"destroy_on_offline"`
	Format           string   `toml:"format"`
	MCAPKeepPacked   bool     `toml:"mcap_keep_packed"`
	Compression      string   `toml:"compression"`
	FrameTargetSize  Size     `toml:"frame_target_size"`
	Coalesce         string   `toml:"coalesce"`
	// MaxDumpsPerMinute caps the dumps rules start; MaxManualPerMinute,
	// apart, those operators start (socket, SIGUSR1). 0 = unlimited.
	MaxDumpsPerMinute  int      `toml:"max_dumps_per_minute"`
	MaxManualPerMinute int      `toml:"max_manual_dumps_per_minute"`
	Reorder            bool     `toml:"reorder"`
	ReorderWindow      Duration `toml:"reorder_window"`
	// The event-time reorder stage of topics with an event_time
	// (dump.EventOrder).
	EventTimeWindow      Duration `toml:"event_time_window"`
	EventTimeMaxMessages int      `toml:"event_time_max_messages"`
	EventTimeMaxBytes    Size     `toml:"event_time_max_bytes"`
	StopDeadline         Duration `toml:"stop_deadline"`
	// DumpMode is the dump files' permission bits, in octal ("0640").
	DumpMode string `toml:"dump_mode"`
	// DumpGroup is the dump files' group, a name or gid ("" = the
	// recorder's).
	DumpGroup string `toml:"dump_group"`
	// MaxTopics bounds the recorder's topic table and the shared-memory
	// segments each shm source follows (0 = engine.DefaultMaxTopics, the
	// default).
	MaxTopics int `toml:"max_topics"`
}

// FileMode parses DumpMode: octal permission bits that let the owner
// read and write.
func (r *Recorder) FileMode() (os.FileMode, error) {
	m, err := strconv.ParseUint(r.DumpMode, 8, 32)
	if err != nil || m > 0o777 || m&0o600 != 0o600 {
		return 0, fmt.Errorf("recorder.dump_mode = %q: want octal permission bits the owner can read and write, e.g. \"0640\"", r.DumpMode)
	}
	return os.FileMode(m), nil
}

// Rotation bounds the dump directory.
type Rotation struct {
	MaxFiles      int  `toml:"max_files"`
	MaxTotalBytes Size `toml:"max_total_bytes"`
	MinFreeDisk   Size `toml:"min_free_disk"`
}

// Topic is a per-topic override; Match is a glob over topic names. A nil
// field keeps the recorder's setting; zero windows are zero.
type Topic struct {
	Match     string    `toml:"match"`
	Pre       *Duration `toml:"pre"`
	Post      *Duration `toml:"post"`
	MaxPacket *Size     `toml:"max_packet"`
	MaxBytes  *Size     `toml:"max_bytes"`
	OnlyFront bool      `toml:"only_front"`
	OnlyBack  bool      `toml:"only_back"`
	KeepLast  int       `toml:"keep_last"`
	// The type matching topics are recorded under, whatever their
	// source declared (types.go).
	TypeKeys
}

// Sources lists where messages come from.
type Sources struct {
	SHM []SHMSource `toml:"shm"`
	UDP []UDPSource `toml:"udp"`
	Raw []RawSource `toml:"raw"`
	CAN []CANSource `toml:"can"` // vehicle buses (can.go)
}

// SHMSource is a directory of shared-memory segments.
type SHMSource struct {
	Dir       string   `toml:"dir"`
	AllowUIDs []int    `toml:"allow_uids"`
	Heartbeat Duration `toml:"heartbeat_timeout"`
	// ReadInterval is how often busy segments are read, all together
	// (nil: defaults.ShmReadInterval; 0: each message as it is published,
	// a wake-up of the recorder per message).
	ReadInterval *Duration `toml:"read_interval"`
}

// MaxShmReadInterval bounds source.shm's read_interval: a producer's ring
// must hold what it publishes in one interval.
const MaxShmReadInterval = 100 * time.Millisecond

// Read is how often the source reads its busy segments (read_interval,
// else the default).
func (s SHMSource) Read() time.Duration {
	if s.ReadInterval == nil {
		return defaults.ShmReadInterval
	}
	return s.ReadInterval.D()
}

// UDPSource is a UDP listener.
type UDPSource struct {
	Listen    string `toml:"listen"`
	Group     string `toml:"group"`
	Interface string `toml:"interface"` // the interface that joins Group ("" = the kernel's choice)
	Topic     string `toml:"topic"`
	// Channel is given to every topic of the listener ("" = none): two
	// listeners that name the same topic need different channels.
	Channel   string `toml:"channel"`
	RcvBuf    *Size  `toml:"rcvbuf"`     // nil = defaults.UDPRcvBuf
	MaxPacket Size   `toml:"max_packet"` // largest datagram kept (0 = capture.DefaultMaxPacket)
	GRO       bool   `toml:"gro"`        // UDP_GRO: take coalesced datagrams from GRO/GSO traffic
	// The type of every topic of the listener (types.go).
	TypeKeys
}

// RawSource is an AF_PACKET capture on one interface.
type RawSource struct {
	Interface   string    `toml:"interface"`
	Promiscuous bool      `toml:"promiscuous"`
	Topic       string    `toml:"topic"`
	Channel     string    `toml:"channel"`
	Payload     string    `toml:"payload"`
	Filter      RawFilter `toml:"filter"`
	// The type of every topic of the capture (types.go).
	TypeKeys
}

// RawFilter is the structured eBPF socket filter of a raw source.
type RawFilter struct {
	EtherType int      `toml:"ethertype"`
	VLAN      int      `toml:"vlan"`
	IPProto   int      `toml:"ip_proto"`
	SrcPorts  []string `toml:"src_ports"`
	DstPorts  []string `toml:"dst_ports"`
	Multicast string   `toml:"multicast"`
}

// Rule is one Lua trigger rule: a file, or a shipped rule by name.
type Rule struct {
	File string `toml:"file"`
	Name string `toml:"builtin"`
	// InstanceName, when set, is the rule's name instead of the one it
	// declares: a second instance of a rule (two thresholds) takes a name
	// of its own. For the shipped rules params.name does the same.
	InstanceName string `toml:"name"`
	Params       Params `toml:"params"`
	// Instructions is the rule's Lua instruction budget per callback
	// (0 = the default, scripts.Budget).
	Instructions int64 `toml:"instructions"`
	// Time overrides the rule's time domain: "producer", "capture" or
	// "event" (the rule names its event_time field)
	// ("" = as the rule declares; producer time by default).
	Time string `toml:"time"`
}

// Control is how operators reach a running recorder.
type Control struct {
	Socket string `toml:"socket"`
	HTTP   string `toml:"http"`
	// HTTPToken, when set, is required as "Authorization: Bearer TOKEN"
	// on every HTTP request.
	HTTPToken string `toml:"http_token"`
	// PProf serves /debug/pprof on the HTTP listener (off by default).
	PProf bool `toml:"pprof"`
}

// Hooks run after each dump.
type Hooks struct {
	Exec    []string `toml:"exec"`
	Timeout Duration `toml:"timeout"`
}

// MaxFileBytes is the largest configuration file Load reads.
const MaxFileBytes = 1 << 20

// Load reads and parses the configuration file at path: a regular file of
// at most MaxFileBytes (a named pipe or /dev/zero is refused, not read
// until memory runs out).
func Load(path string) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readFile reads the configuration file at path, refusing anything but a
// regular file of at most MaxFileBytes.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &Problem{File: path, Msg: "is " + fileKind(st.Mode()) + ", not a regular file"}
	}
	if st.Size() > MaxFileBytes {
		return nil, &Problem{File: path, Msg: fmt.Sprintf("%d bytes, more than a configuration holds (limit %d)", st.Size(), MaxFileBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &Problem{File: path, Msg: fmt.Sprintf("more than %d bytes", MaxFileBytes)}
	}
	return data, nil
}

// Parse decodes data (named name in errors) over the defaults and checks
// what can be checked from the file alone. On any problem it returns nil
// and Errors, every problem found, each with its line (a syntax error
// stops the parse: then it is the only one). The checks that need the
// packages (rules, sources, the recorder's limits) are
// internal/daemon.Check's.
func Parse(name string, data []byte) (*File, error) {
	f, ps := parse(name, data)
	if len(ps) > 0 {
		return nil, ps.Capped(MaxProblems)
	}
	return f, nil
}

// LoadForCheck is Load for a checker that goes on past the file's own
// problems: it returns the decoded file with them (nil file only when the
// file cannot be read or has a syntax error, err then says why), so that
// the checks that need the packages report theirs too.
func LoadForCheck(path string) (*File, Errors, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, ps := parse(path, data)
	if f == nil {
		return nil, nil, ps
	}
	return f, ps, nil
}

// parse decodes and checks data; a nil File means a syntax error that
// stops the parse (see parseTree).
func parse(name string, data []byte) (*File, Errors) {
	f := defaultFile()
	f.name = name
	f.lines = indexLines(data)
	tree, syntax := parseTree(name, data, f.lines)
	if tree == nil {
		return nil, syntax
	}
	d := &decoder{f: f, bad: map[string]bool{}}
	d.table("", tree, reflect.ValueOf(f).Elem())
	for _, p := range syntax {
		d.bad[p.Key] = true
	}
	ps := append(syntax, d.ps...)
	ps = append(ps, f.limitTables()...)
	// a key whose value was not taken keeps its default: a check of it
	// would be about a value the file does not hold
	for _, p := range append(f.check(), f.resolveTypes(name, data)...) {
		if !d.bad[p.Key] {
			ps = append(ps, p)
		}
	}
	return f, ps.Sorted()
}

// limitTables refuses more tables of a kind than the limits allow and
// leaves the rest out, so that no check loads them.
func (f *File) limitTables() Errors {
	var ps Errors
	limit := func(key string, n, max int) bool {
		if n <= max {
			return false
		}
		ps = append(ps, f.Problem(fmt.Sprintf("%s[%d]", key, max), "%d [[%s]] tables, at most %d", n, key, max))
		return true
	}
	if limit("rule", len(f.Rules), MaxRules) {
		f.Rules = f.Rules[:MaxRules]
	}
	if limit("topic", len(f.Topics), MaxTopicOptions) {
		f.Topics = f.Topics[:MaxTopicOptions]
	}
	if limit("source.shm", len(f.Sources.SHM), MaxSources) {
		f.Sources.SHM = f.Sources.SHM[:MaxSources]
	}
	if limit("source.udp", len(f.Sources.UDP), MaxSources) {
		f.Sources.UDP = f.Sources.UDP[:MaxSources]
	}
	if limit("source.raw", len(f.Sources.Raw), MaxSources) {
		f.Sources.Raw = f.Sources.Raw[:MaxSources]
	}
	return ps
}

// defaults is the configuration a file is decoded over: every value from
// the one table of defaults (internal/defaults/defaults.go).
func defaultFile() *File {
	return &File{
		Recorder: Recorder{
			DumpDir:              defaults.DumpDir,
			CacheSize:            Size(defaults.CacheSize),
			Pre:                  Duration(defaults.Pre),
			Post:                 Duration(defaults.Post),
			Guard:                Duration(defaults.Guard),
			MaxPacket:            Size(defaults.MaxPacket),
			TopicBytes:           Size(defaults.TopicBytes),
			Include:              []string{},
			Exclude:              []string{},
			Format:               defaults.Format,
			Compression:          defaults.Compression,
			FrameTargetSize:      defaults.FrameSize,
			Coalesce:             defaults.Coalesce,
			MaxDumpsPerMinute:    defaults.DumpsPerMinute,
			MaxManualPerMinute:   defaults.ManualPerMinute,
			ReorderWindow:        Duration(defaults.ReorderWindow),
			EventTimeWindow:      Duration(defaults.EventOrderWindow),
			EventTimeMaxMessages: defaults.EventOrderMaxMessages,
			EventTimeMaxBytes:    Size(defaults.EventOrderMaxBytes),
			StopDeadline:         Duration(defaults.StopDeadline),
			DumpMode:             "0640",
			MaxTopics:            defaults.MaxTopics,
		},
		Rotation: Rotation{MaxFiles: defaults.MaxFiles, MaxTotalBytes: Size(defaults.MaxTotalBytes),
			MinFreeDisk: Size(defaults.MinFreeDisk)},
		Control: Control{Socket: defaults.ControlSocket},
		Hooks:   Hooks{Timeout: Duration(defaults.HookTimeout)},
		Upload:  uploadDefaults(),
		Live:    liveDefaults(),
	}
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%q: want one of %s%s", v, strings.Join(allowed, ", "), suggest.DidYouMean(v, allowed))
}

// check finds every problem the file shows on its own.
func (f *File) check() Errors {
	var ps Errors
	add := func(key, format string, args ...any) { ps = append(ps, f.Problem(key, format, args...)) }
	r := &f.Recorder
	if r.DumpDir == "" {
		add("recorder.dump_dir", "is empty")
	}
	if r.CacheSize < Size(defaults.MinCacheSize) {
		add("recorder.cache_size", "%s: want at least %s", units.FormatSize(int64(r.CacheSize)), units.FormatSize(defaults.MinCacheSize))
	}
	if r.MaxPacket <= 0 {
		add("recorder.max_packet", "%d: want > 0 (omit it for the default %s)", r.MaxPacket, units.FormatSize(defaults.MaxPacket))
	}
	if r.TopicBytes < defaults.MinRingBytes {
		add("recorder.topic_bytes", "%s: want at least %s (omit it for the default %s)", units.FormatSize(int64(r.TopicBytes)),
			units.FormatSize(defaults.MinRingBytes), units.FormatSize(defaults.TopicBytes))
	} else if r.TopicBytes > r.CacheSize && r.CacheSize >= Size(defaults.MinCacheSize) {
		cache, ring := units.FormatSize(int64(r.CacheSize)), units.FormatSize(int64(r.TopicBytes))
		if k := f.setKey("recorder.cache_size", "recorder.topic_bytes"); k == "recorder.cache_size" {
			add(k, "%s cannot hold one topic's ring: recorder.topic_bytes is %s%s; raise cache_size or lower topic_bytes",
				cache, ring, f.defaultNote("recorder.topic_bytes"))
		} else {
			add(k, "%s: one topic's ring does not fit in recorder.cache_size %s%s; raise cache_size or lower topic_bytes",
				ring, cache, f.defaultNote("recorder.cache_size"))
		}
	}
	if r.FrameTargetSize <= 0 {
		add("recorder.frame_target_size", "%d: want > 0 (omit it for the default %s)", r.FrameTargetSize, units.FormatSize(defaults.FrameSize))
	}
	for key, globs := range map[string][]string{"recorder.include": r.Include, "recorder.exclude": r.Exclude} {
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil {
				add(key, "bad glob %q: %v", g, err)
			}
		}
	}
	if err := oneOf(r.Format, "pack", "mcap"); err != nil {
		add("recorder.format", "%v", err)
	}
	if err := oneOf(r.Compression, "none", "lz4", "zstd"); err != nil {
		add("recorder.compression", "%v", err)
	}
	if err := oneOf(r.Coalesce, "merge", "separate"); err != nil {
		add("recorder.coalesce", "%v", err)
	}
	if _, err := r.FileMode(); err != nil {
		add("recorder.dump_mode", "%q: want octal permission bits the owner can read and write, e.g. \"0640\"", r.DumpMode)
	}
	if r.MaxDumpsPerMinute < 0 {
		add("recorder.max_dumps_per_minute", "%d: want >= 0 (0 = unlimited)", r.MaxDumpsPerMinute)
	}
	if r.MaxManualPerMinute < 0 {
		add("recorder.max_manual_dumps_per_minute", "%d: want >= 0 (0 = unlimited)", r.MaxManualPerMinute)
	}
	if r.Reorder && r.ReorderWindow <= 0 {
		add("recorder.reorder_window", "must be > 0 when reorder = true")
	}
	if r.EventTimeWindow <= 0 {
		add("recorder.event_time_window", "%v: want > 0 (omit it for the default %v)", r.EventTimeWindow.D(), defaults.EventOrderWindow)
	}
	if r.EventTimeMaxMessages <= 0 {
		add("recorder.event_time_max_messages", "%d: want > 0 (omit it for the default %d)", r.EventTimeMaxMessages, defaults.EventOrderMaxMessages)
	}
	if r.EventTimeMaxBytes <= 0 {
		add("recorder.event_time_max_bytes", "%d: want > 0 (omit it for the default %s)", int64(r.EventTimeMaxBytes), units.FormatSize(defaults.EventOrderMaxBytes))
	}
	if r.StopDeadline <= 0 {
		add("recorder.stop_deadline", "%v: want > 0 (omit it for the default %v)", r.StopDeadline.D(), defaults.StopDeadline)
	}
	if f.Rotation.MaxFiles < 0 {
		add("rotation.max_files", "%d: want >= 0 (0 = unlimited)", f.Rotation.MaxFiles)
	}
	for i, t := range f.Topics {
		k := func(name string) string { return fmt.Sprintf("topic[%d].%s", i, name) }
		if t.Match == "" {
			add(k("match"), "is empty")
		} else if _, err := path.Match(t.Match, ""); err != nil {
			add(k("match"), "bad glob %q: %v", t.Match, err)
		}
		if t.OnlyFront && t.OnlyBack {
			add(k("only_back"), "only_front and only_back are exclusive (topic %q)", t.Match)
		}
		if t.KeepLast < 0 {
			add(k("keep_last"), "%d: want >= 0", t.KeepLast)
		}
		if t.MaxPacket != nil && *t.MaxPacket <= 0 {
			add(k("max_packet"), "%d: want > 0 (omit it to keep recorder.max_packet)", *t.MaxPacket)
		}
		if t.MaxBytes != nil {
			switch mb := *t.MaxBytes; {
			case mb < defaults.MinRingBytes:
				add(k("max_bytes"), "%s: want at least %s (omit it to keep recorder.topic_bytes)", units.FormatSize(int64(mb)), units.FormatSize(defaults.MinRingBytes))
			case mb > r.CacheSize:
				add(k("max_bytes"), "%s is more than recorder.cache_size %s%s can hold: raise cache_size or lower max_bytes",
					units.FormatSize(int64(mb)), units.FormatSize(int64(r.CacheSize)), f.defaultNote("recorder.cache_size"))
			}
		}
	}
	for i, s := range f.Sources.SHM {
		if s.Dir == "" {
			add(fmt.Sprintf("source.shm[%d].dir", i), "is empty")
		}
		for _, u := range s.AllowUIDs {
			if u < 0 || int64(u) > math.MaxUint32-1 {
				add(fmt.Sprintf("source.shm[%d].allow_uids", i), "%d is not a uid (0 to %d)", u, uint32(math.MaxUint32-1))
				break
			}
		}
		if d := s.ReadInterval; d != nil && (*d < 0 || d.D() > MaxShmReadInterval) {
			add(fmt.Sprintf("source.shm[%d].read_interval", i), "%s: want 0 to %s (omit it for the default %s)",
				units.FormatDuration(d.D()), units.FormatDuration(MaxShmReadInterval), units.FormatDuration(defaults.ShmReadInterval))
		}
	}
	for i, s := range f.Sources.UDP {
		k := func(name string) string { return fmt.Sprintf("source.udp[%d].%s", i, name) }
		if s.Listen == "" {
			add(k("listen"), "is empty")
		}
		if s.Interface != "" && s.Group == "" {
			add(k("interface"), "%q: only used to join a multicast group; set group", s.Interface)
		}
		if s.RcvBuf != nil && *s.RcvBuf <= 0 {
			add(k("rcvbuf"), "%d: want > 0 (omit it for the default %s)", *s.RcvBuf, units.FormatSize(defaults.UDPRcvBuf))
		}
	}
	for i, s := range f.Sources.Raw {
		if s.Interface == "" {
			add(fmt.Sprintf("source.raw[%d].interface", i), "is empty")
		}
		if s.Payload != "" {
			if err := oneOf(s.Payload, "frame", "udp"); err != nil {
				add(fmt.Sprintf("source.raw[%d].payload", i), "%v", err)
			}
		}
		// the filter's fields are 16 and 8 bits on the wire: a larger
		// value would be cut, not refused
		for _, r := range []struct {
			key    string
			v, max int
		}{{"ethertype", s.Filter.EtherType, 0xffff}, {"vlan", s.Filter.VLAN, 4094}, {"ip_proto", s.Filter.IPProto, 255}} {
			if r.v < 0 || r.v > r.max {
				add(fmt.Sprintf("source.raw[%d].filter.%s", i, r.key), "%d: want 0 to %d (0 = any)", r.v, r.max)
			}
		}
	}
	for i, r := range f.Rules {
		if (r.File == "") == (r.Name == "") {
			add(fmt.Sprintf("rule[%d]", i), "set exactly one of file or builtin")
		}
		if r.Time != "" {
			if err := oneOf(r.Time, "producer", "capture", "event"); err != nil {
				add(fmt.Sprintf("rule[%d].time", i), "%v", err)
			}
		}
		if r.Instructions < 0 {
			add(fmt.Sprintf("rule[%d].instructions", i), "%d: want >= 0 (0 = the default budget)", r.Instructions)
		}
	}
	if f.Hooks.Timeout <= 0 {
		add("hooks.timeout", "%v: want > 0 (omit it for the default %v)", f.Hooks.Timeout.D(), defaults.HookTimeout)
	}
	if _, _, _, err := f.UploadOptions(); err != nil {
		var oe *upload.OptionError
		if errors.As(err, &oe) { // at the key's own line
			add(f.setKey("upload."+oe.Key, "upload.endpoint", "upload"), "%s", oe.Reason)
		} else {
			add(f.setKey("upload.endpoint", "upload"), "%v", err)
		}
	}
	return append(ps, f.checkIntSizes()...)
}

// setKey returns the first of keys the file sets (keys[0] when none).
func (f *File) setKey(keys ...string) string {
	for _, k := range keys {
		if _, ok := f.lines.at[k]; ok {
			return k
		}
	}
	return keys[0]
}

// defaultNote is " (the default)" when the file does not set key: the
// user reads that the value came from the defaults, not from them.
func (f *File) defaultNote(key string) string {
	if _, ok := f.lines.at[key]; ok {
		return ""
	}
	return " (the default)"
}

// checkIntSizes refuses the sizes that the recorder takes as an int when
// this platform's int cannot hold them (2GiB and more on 32-bit), instead
// of letting them wrap (4GiB+100 would become 100).
func (f *File) checkIntSizes() Errors {
	type size struct {
		field string
		v     Size
	}
	sizes := []size{{"recorder.max_packet", f.Recorder.MaxPacket}, {"recorder.frame_target_size", f.Recorder.FrameTargetSize}}
	for i, t := range f.Topics {
		if t.MaxPacket != nil {
			sizes = append(sizes, size{fmt.Sprintf("topic[%d].max_packet", i), *t.MaxPacket})
		}
	}
	for i, s := range f.Sources.UDP {
		if s.RcvBuf != nil {
			sizes = append(sizes, size{fmt.Sprintf("source.udp[%d].rcvbuf", i), *s.RcvBuf})
		}
		sizes = append(sizes, size{fmt.Sprintf("source.udp[%d].max_packet", i), s.MaxPacket})
	}
	var ps Errors
	for _, s := range sizes {
		if int64(s.v) > math.MaxInt {
			ps = append(ps, f.Problem(s.field, "%s: more than a %d-bit int holds", units.FormatSize(int64(s.v)), strconv.IntSize))
		}
	}
	return ps
}

// fileKind names what a non-regular file is, for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
