package dump

import (
	"os"
	"time"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/pack"
)

// Policy says what happens to a trigger whose window overlaps a dump that
// is still waiting for its post window.
type Policy string

const (
	// PolicyMerge folds the trigger into the waiting dump: one file whose
	// window covers both, every trigger recorded.
	PolicyMerge Policy = "merge"
	// PolicySeparate writes one file per trigger.
	PolicySeparate Policy = "separate"
)

// Dump defaults (the user-facing ones from internal/defaults/defaults.go).
const (
	DefaultHookQueue    = 16
	DefaultStopTimeout  = defaults.StopDeadline
	DefaultPollInterval = 2 * time.Millisecond
	DefaultFrameSize    = defaults.FrameSize
	DefaultFrameSpan    = defaults.FrameSpan
)

// Config configures a Dumper: dump files, triggers and hooks.
type Config struct {
	// Dir is where dumps are written; it is created if missing and must be
	// writable.
	Dir string
	// FileMode is the permission bits of dump files (0 = DefaultFileMode,
	// 0640; it must let the owner read and write). A Dir the recorder
	// creates gets the same bits plus search where there is read (0750);
	// an existing one is left as it is.
	FileMode os.FileMode
	// Group is the group (name or gid) dump files and a created Dir are
	// given; "" keeps the process's group.
	Group string
	// MaxFiles and MaxTotalBytes bound the dumps kept in Dir (0 = no
	// bound); after each dump the oldest beyond either bound are deleted,
	// one at a time, never one the Keeper keeps.
	MaxFiles      int
	MaxTotalBytes int64
	// MinFreeDisk refuses a dump (counted, reported) when the free space of
	// Dir's file system minus the dump's size estimate would fall below it.
	// With a Keeper, old dumps are deleted first to make the room (see
	// Keeper) when that can make it.
	MinFreeDisk int64
	// Compression of each frame's data: "none" (default), "lz4", "zstd".
	Compression string
	// FrameSize is the data size at which a frame is closed
	// (DefaultFrameSize when 0), FrameSpan the time a pack frame may span:
	// a message captured FrameSpan or more after the frame's first starts
	// the next (DefaultFrameSpan when 0; negative: frames bounded by size
	// only). A frame is what one damaged byte or a cut costs (docs/pack.md,
	// "Frame bounds").
	FrameSize int
	FrameSpan time.Duration
	// Policy for overlapping triggers (PolicyMerge when "").
	Policy Policy
	// MaxPerMinute caps the dumps rules start per minute of clock time
	// (0 = no cap). Excess triggers are rejected with ErrRateLimited and
	// counted.
	MaxPerMinute int
	// MaxManualPerMinute caps, apart, the dumps operators start per minute
	// (triggers whose Source is not dumpinfo.SourceLua: control socket,
	// signal, Go API), so a rule that spends its budget never eats an
	// operator's trigger (0 = no cap).
	MaxManualPerMinute int
	// ReorderWindow, when > 0, writes each dump in producer-time order
	// (capture time for messages without one) through a bounded reorder
	// stage holding this much capture time, at most ReorderMaxMessages
	// (DefaultReorderMaxMessages when 0) messages. Off: capture order.
	ReorderWindow      time.Duration
	ReorderMaxMessages int
	// Transforms are write-path transforms (transform.go: EventOrder, or a
	// program's own), in order: the first sees the messages after the
	// merge (and the producer-time reorder), the last writes to the file.
	Transforms []Transform
	// Hooks are told every dump's outcome (written or not), on their own
	// goroutine.
	Hooks []Hook
	// HookQueue bounds the results waiting for the hooks
	// (DefaultHookQueue when 0); when full, results are dropped for the
	// hooks (counted), never delaying the next dump.
	HookQueue int
	// StopTimeout bounds how long Stop spends finishing pending dumps
	// (DefaultStopTimeout when 0).
	StopTimeout time.Duration
	// PollInterval is how often (real time) the dumper checks the clock for
	// dumps whose post window has passed (DefaultPollInterval when 0).
	PollInterval time.Duration
	// NewWriter makes the writer of one dump file (nil: pack's write(2)
	// path with early writeback, NewPackWriteWriter; it beat the stream
	// writer without early writeback and the mmap writer here, see
	// bench/). Tests inject faults through it; the MCAP format plugs in
	// here.
	NewWriter NewWriterFunc
	// Extension is the dump files' extension, ".pack" when ""; set it with
	// NewWriter for another format (".mcap"). Rotation counts only files
	// with this extension.
	Extension string
	// WriterName is recorded in each dump's header and dump info.
	WriterName string
	// Keeper, when set, protects dumps from rotation by MaxFiles and
	// MaxTotalBytes (an upload queue's pending dumps). When a new dump
	// would leave less than MinFreeDisk free, the oldest dumps are deleted
	// to make its room (Dir.MakeRoom): those it does not keep first (the
	// uploaded), then those it keeps (telling it), one at a time and only
	// as many as the room needs; none when deleting them all would not
	// make the room (the disk is full of other files): the dump is then
	// refused, saying so.
	Keeper Keeper
	// Signer, when set, signs every dump (evidence.Seal, written while the
	// dump is written) and chains the dumps of Dir (evidence.Chain: a
	// counter and the previous dump's seal ID in each seal, the signed
	// ledger evidence.LedgerName in Dir, rotation recorded in it before a
	// dump is deleted). PreviousKeys are earlier signing keys whose
	// ledger the chain may go on from (the key was replaced).
	Signer       *evidence.Signer
	PreviousKeys *evidence.Keyring
	// KeepPriority leaves the dumper's thread at the process's CPU and I/O
	// priority. By default the goroutine that writes dumps runs on an OS
	// thread of its own whose I/O priority is the best-effort class's
	// lowest and whose nice value is raised by WriterNice, so the
	// recorder's ingest (sources, shm consumers) goes first when the CPUs
	// or the disk are contended (dump/prio_linux.go). For comparisons.
	KeepPriority bool
}

// WriterNice is how much the dumper's thread's nice value is raised
// (Config.KeepPriority).
const WriterNice = 5

func (d Config) withDefaults() Config {
	if d.FileMode == 0 {
		d.FileMode = DefaultFileMode
	}
	if d.Compression == "" {
		d.Compression = "none"
	}
	if d.FrameSize == 0 {
		d.FrameSize = DefaultFrameSize
	}
	if d.FrameSpan == 0 {
		d.FrameSpan = DefaultFrameSpan
	}
	if d.Policy == "" {
		d.Policy = PolicyMerge
	}
	if d.HookQueue == 0 {
		d.HookQueue = DefaultHookQueue
	}
	if d.StopTimeout == 0 {
		d.StopTimeout = DefaultStopTimeout
	}
	if d.PollInterval == 0 {
		d.PollInterval = DefaultPollInterval
	}
	if d.NewWriter == nil {
		d.NewWriter = NewPackWriteWriter
	}
	if d.Extension == "" {
		d.Extension = PackExt
	}
	if d.WriterName == "" {
		d.WriterName = "edr-lite"
	}
	return d
}

// Validate applies the defaults to a copy of d and checks it, as New does
// (the group resolved), without touching the directory.
func (d Config) Validate() error {
	d = d.withDefaults()
	if err := d.validate(); err != nil {
		return err
	}
	_, err := lookupGroup(d.Group) // New resolves it too
	return err
}

func (d *Config) validate() error {
	if d.Dir == "" {
		return configErr("Dir", "required")
	}
	if d.MaxFiles < 0 {
		return configErr("MaxFiles", "must be >= 0, got %d", d.MaxFiles)
	}
	if d.FileMode&^os.ModePerm != 0 || d.FileMode&0o600 != 0o600 {
		return configErr("FileMode", "%#o: want permission bits that let the owner read and write (e.g. 0640)", uint32(d.FileMode))
	}
	if d.MaxTotalBytes < 0 {
		return configErr("MaxTotalBytes", "must be >= 0, got %d", d.MaxTotalBytes)
	}
	if d.MinFreeDisk < 0 {
		return configErr("MinFreeDisk", "must be >= 0, got %d", d.MinFreeDisk)
	}
	switch d.Compression {
	case "none", "lz4", "zstd":
	default:
		return configErr("Compression", "want none, lz4 or zstd, got %q", d.Compression)
	}
	if d.FrameSize < 0 || d.FrameSize > pack.MaxTargetFrameSize {
		return configErr("FrameSize", "must be between 0 and %d (pack.MaxTargetFrameSize: every frame is read within the readers' default memory limit), got %d",
			pack.MaxTargetFrameSize, d.FrameSize)
	}
	if d.Policy != PolicyMerge && d.Policy != PolicySeparate {
		return configErr("Policy", "want %q or %q, got %q", PolicyMerge, PolicySeparate, d.Policy)
	}
	if d.MaxPerMinute < 0 {
		return configErr("MaxPerMinute", "must be >= 0, got %d", d.MaxPerMinute)
	}
	if d.MaxManualPerMinute < 0 {
		return configErr("MaxManualPerMinute", "must be >= 0, got %d", d.MaxManualPerMinute)
	}
	if d.HookQueue < 0 {
		return configErr("HookQueue", "must be >= 0, got %d", d.HookQueue)
	}
	if d.ReorderWindow < 0 || d.ReorderMaxMessages < 0 {
		return configErr("ReorderWindow", "must be >= 0")
	}
	if d.StopTimeout < 0 || d.PollInterval < 0 {
		return configErr("StopTimeout", "durations must be >= 0")
	}
	return nil
}
