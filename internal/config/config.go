package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/edr-lite/edr-lite/internal/units"
)

// ErrInvalid is wrapped by every error about the content of a configuration.
var ErrInvalid = errors.New("config: invalid configuration")

// invalidError is an error about a configuration's content, printed as
// "FILE:LINE: what" (compiler style) and matching ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

//go:embed default.toml
var defaultTOML string

// Default returns the fully commented default configuration.
func Default() string { return defaultTOML }

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
			return err
		}
		*s = Size(n)
		return nil
	}
	return fmt.Errorf("want a size such as \"256MiB\", got %T", v)
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
			return err
		}
		if p < 0 {
			return fmt.Errorf("duration %q is negative", x)
		}
		*d = Duration(p)
		return nil
	}
	return fmt.Errorf("want a duration such as \"15s\", got %T", v)
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
}

// Recorder holds the recorder-wide settings.
type Recorder struct {
	DumpDir           string   `toml:"dump_dir"`
	CacheSize         Size     `toml:"cache_size"`
	Mlock             bool     `toml:"mlock"`
	Pre               Duration `toml:"pre"`
	Post              Duration `toml:"post"`
	Guard             Duration `toml:"guard"`
	MaxPacket         Size     `toml:"max_packet"`
	TopicBytes        Size     `toml:"topic_bytes"`
	Include           []string `toml:"include"`
	Exclude           []string `toml:"exclude"`
	BusySkipData      bool     `toml:"busy_skip_data"`
	DestroyOnOffline  bool     `toml:"destroy_on_offline"`
	Format            string   `toml:"format"`
	Compression       string   `toml:"compression"`
	FrameTargetSize   Size     `toml:"frame_target_size"`
	Coalesce          string   `toml:"coalesce"`
	MaxDumpsPerMinute int      `toml:"max_dumps_per_minute"`
	Reorder           bool     `toml:"reorder"`
	ReorderWindow     Duration `toml:"reorder_window"`
	StopDeadline      Duration `toml:"stop_deadline"`
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

// Topic is a per-topic override; Match is a glob over topic names.
type Topic struct {
	Match     string   `toml:"match"`
	Pre       Duration `toml:"pre"`
	Post      Duration `toml:"post"`
	MaxPacket Size     `toml:"max_packet"`
	MaxBytes  Size     `toml:"max_bytes"`
	OnlyFront bool     `toml:"only_front"`
	OnlyBack  bool     `toml:"only_back"`
	KeepLast  int      `toml:"keep_last"`
}

// Sources lists where messages come from.
type Sources struct {
	SHM []SHMSource `toml:"shm"`
	UDP []UDPSource `toml:"udp"`
	Raw []RawSource `toml:"raw"`
}

// SHMSource is a directory of shared-memory segments.
type SHMSource struct {
	Dir       string   `toml:"dir"`
	AllowUIDs []int    `toml:"allow_uids"`
	Heartbeat Duration `toml:"heartbeat_timeout"`
}

// UDPSource is a UDP listener.
type UDPSource struct {
	Listen    string `toml:"listen"`
	Group     string `toml:"group"`
	Interface string `toml:"interface"` // the interface that joins Group ("" = the kernel's choice)
	Topic     string `toml:"topic"`
	Type      string `toml:"type"` // type name given to every topic of the listener
	RcvBuf    Size   `toml:"rcvbuf"`
	MaxPacket Size   `toml:"max_packet"` // largest datagram kept (0 = capture.DefaultMaxPacket)
	GRO       bool   `toml:"gro"`        // UDP_GRO: take coalesced datagrams from GRO/GSO traffic
}

// RawSource is an AF_PACKET capture on one interface.
type RawSource struct {
	Interface   string    `toml:"interface"`
	Promiscuous bool      `toml:"promiscuous"`
	Topic       string    `toml:"topic"`
	Payload     string    `toml:"payload"`
	Filter      RawFilter `toml:"filter"`
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
	File   string            `toml:"file"`
	Name   string            `toml:"builtin"`
	Params map[string]string `toml:"params"`
	// Instructions is the rule's Lua instruction budget per callback
	// (0 = the default, scripts.Budget).
	Instructions int64 `toml:"instructions"`
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

// Hooks run after each finalized dump.
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
		return nil, invalidf("%s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	if st.Size() > MaxFileBytes {
		return nil, invalidf("%s: %d bytes, more than a configuration holds (limit %d)", path, st.Size(), MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, invalidf("%s: more than %d bytes", path, MaxFileBytes)
	}
	return Parse(path, data)
}

// Parse decodes data (named name in errors) over the defaults and checks
// it. Unknown keys are errors.
func Parse(name string, data []byte) (*File, error) {
	f := defaults()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, invalidf("%s:%d: %s", name, pe.Position.Line, pe.Message)
		}
		return nil, invalidf("%s: %v", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, invalidf("%s:%d: unknown key %q", name, lineOfKey(data, k), k.String())
	}
	if err := f.check(); err != nil {
		return nil, invalidf("%s: %v", name, err)
	}
	return f, nil
}

// lineOfKey finds the line where the last component of key is assigned, at
// or after the header of its table; 0 when not found.
func lineOfKey(data []byte, key toml.Key) int {
	if len(key) == 0 {
		return 0
	}
	last := regexp.QuoteMeta(key[len(key)-1])
	re := regexp.MustCompile(`^\s*("?)` + last + `("?)\s*=`)
	hdr := regexp.MustCompile(`^\s*\[+\s*([^\]]+?)\s*\]+`)
	table := strings.Join(key[:len(key)-1], ".")
	if table == "" {
		// a top-level key, or a table header that is itself unknown
		table = ""
	}
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		if m := hdr.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if cur == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		if cur == table && re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

func defaults() *File {
	return &File{
		Recorder: Recorder{
			DumpDir:           "/var/lib/edr-lite/dumps",
			CacheSize:         256 << 20,
			Pre:               Duration(15 * time.Second),
			Post:              Duration(5 * time.Second),
			Guard:             Duration(500 * time.Millisecond),
			MaxPacket:         4 << 20,
			TopicBytes:        4 << 20,
			Include:           []string{},
			Exclude:           []string{},
			Format:            "pack",
			Compression:       "none",
			FrameTargetSize:   1 << 20,
			Coalesce:          "merge",
			MaxDumpsPerMinute: 6,
			ReorderWindow:     Duration(100 * time.Millisecond),
			StopDeadline:      Duration(30 * time.Second),
			DumpMode:          "0640",
			MaxTopics:         4096, // engine.DefaultMaxTopics (daemon_test checks they agree)
		},
		Rotation: Rotation{MaxFiles: 100, MaxTotalBytes: 10 << 30, MinFreeDisk: 512 << 20},
		Hooks:    Hooks{Timeout: Duration(5 * time.Minute)},
	}
}

func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s = %q: want one of %s", field, v, strings.Join(allowed, ", "))
}

func (f *File) check() error {
	r := &f.Recorder
	if r.DumpDir == "" {
		return errors.New("recorder.dump_dir is empty")
	}
	if r.CacheSize < 1<<20 {
		return fmt.Errorf("recorder.cache_size = %s: want at least 1MiB", units.FormatSize(int64(r.CacheSize)))
	}
	if r.MaxPacket <= 0 || r.MaxPacket > r.CacheSize {
		return fmt.Errorf("recorder.max_packet = %s: want > 0 and <= cache_size", units.FormatSize(int64(r.MaxPacket)))
	}
	if err := oneOf("recorder.format", r.Format, "pack", "mcap"); err != nil {
		return err
	}
	if err := oneOf("recorder.compression", r.Compression, "none", "lz4", "zstd"); err != nil {
		return err
	}
	if err := oneOf("recorder.coalesce", r.Coalesce, "merge", "separate"); err != nil {
		return err
	}
	if _, err := r.FileMode(); err != nil {
		return err
	}
	if r.MaxDumpsPerMinute < 0 {
		return fmt.Errorf("recorder.max_dumps_per_minute = %d: want >= 0 (0 = unlimited)", r.MaxDumpsPerMinute)
	}
	if f.Rotation.MaxFiles < 0 {
		return fmt.Errorf("rotation.max_files = %d: want >= 0 (0 = unlimited)", f.Rotation.MaxFiles)
	}
	for i, t := range f.Topics {
		if t.Match == "" {
			return fmt.Errorf("topic[%d].match is empty", i)
		}
		if t.OnlyFront && t.OnlyBack {
			return fmt.Errorf("topic[%d] (%s): only_front and only_back are exclusive", i, t.Match)
		}
		if t.KeepLast < 0 {
			return fmt.Errorf("topic[%d] (%s): keep_last = %d: want >= 0", i, t.Match, t.KeepLast)
		}
	}
	for i, s := range f.Sources.SHM {
		if s.Dir == "" {
			return fmt.Errorf("source.shm[%d].dir is empty", i)
		}
	}
	for i, s := range f.Sources.UDP {
		if s.Listen == "" {
			return fmt.Errorf("source.udp[%d].listen is empty", i)
		}
		if s.Interface != "" && s.Group == "" {
			return fmt.Errorf("source.udp[%d].interface %q: only used to join a multicast group; set group", i, s.Interface)
		}
	}
	for i, s := range f.Sources.Raw {
		if s.Interface == "" {
			return fmt.Errorf("source.raw[%d].interface is empty", i)
		}
		if s.Payload != "" {
			if err := oneOf(fmt.Sprintf("source.raw[%d].payload", i), s.Payload, "frame", "udp"); err != nil {
				return err
			}
		}
	}
	for i, r := range f.Rules {
		if (r.File == "") == (r.Name == "") {
			return fmt.Errorf("rule[%d]: set exactly one of file or builtin", i)
		}
		if r.Instructions < 0 {
			return fmt.Errorf("rule[%d].instructions = %d: want >= 0 (0 = the default budget)", i, r.Instructions)
		}
	}
	return f.checkIntSizes()
}

// checkIntSizes refuses the sizes that the recorder takes as an int when
// this platform's int cannot hold them (2GiB and more on 32-bit), instead
// of letting them wrap (4GiB+100 would become 100).
func (f *File) checkIntSizes() error {
	type size struct {
		field string
		v     Size
	}
	sizes := []size{{"recorder.max_packet", f.Recorder.MaxPacket}, {"recorder.frame_target_size", f.Recorder.FrameTargetSize}}
	for i, t := range f.Topics {
		sizes = append(sizes, size{fmt.Sprintf("topic[%d].max_packet", i), t.MaxPacket})
	}
	for i, s := range f.Sources.UDP {
		sizes = append(sizes, size{fmt.Sprintf("source.udp[%d].rcvbuf", i), s.RcvBuf}, size{fmt.Sprintf("source.udp[%d].max_packet", i), s.MaxPacket})
	}
	for _, s := range sizes {
		if int64(s.v) > math.MaxInt {
			return fmt.Errorf("%s = %s: more than a %d-bit int holds", s.field, units.FormatSize(int64(s.v)), strconv.IntSize)
		}
	}
	return nil
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
