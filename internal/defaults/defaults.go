package defaults

import "time"

// The recorder ([recorder] in the configuration file; engine.Config).
const (
	// DumpDir is where dumps are written.
	DumpDir = "/var/lib/edr-lite/dumps"
	// CacheSize is the arena every ring lives in.
	CacheSize = 256 << 20
	// Pre and Post are the window kept before and after a trigger, per
	// topic, when neither the topic, the rule nor the trigger sets one.
	Pre  = 15 * time.Second
	Post = 5 * time.Second
	// Guard is the extra history kept on both sides of every window.
	Guard = 500 * time.Millisecond
	// MaxPacket is the largest message accepted by default.
	MaxPacket = 4 << 20
	// TopicBytes is the default byte cap of one topic's ring.
	TopicBytes = 4 << 20
	// MinRingBytes is the smallest ring (and arena block) there is.
	MinRingBytes = 4096
	// MaxTopics bounds the topic table.
	MaxTopics = 4096
	// MinCacheSize is the smallest cache the configuration accepts.
	MinCacheSize = 1 << 20
)

// The dump pipeline ([recorder] and [rotation]; dump.Config).
const (
	Format      = "pack"
	Compression = "none"
	// FrameSize is the data size at which a dump's frame is closed.
	FrameSize = 1 << 20
	// Coalesce is what happens to a trigger overlapping a waiting dump.
	Coalesce = "merge"
	// DumpsPerMinute caps the dumps rules start per minute.
	DumpsPerMinute = 6
	// ManualPerMinute caps the dumps operators start per minute (control
	// socket, SIGUSR1, the Go API), counted apart from the rules' budget.
	ManualPerMinute = 6
	// ReorderWindow is the reorder stage's span when reorder is on.
	ReorderWindow = 100 * time.Millisecond
	// EventOrderWindow is how far a topic's event time may lag the capture
	// time and still be put in order by a dump's event-time reorder stage.
	EventOrderWindow = 100 * time.Millisecond
	// EventOrderMaxMessages and EventOrderMaxBytes bound what that stage
	// holds per dump (the memory bound: bytes of payload plus ~80 bytes
	// per message).
	EventOrderMaxMessages = 1 << 16
	EventOrderMaxBytes    = 64 << 20
	// StopDeadline bounds how long stopping spends finishing pending dumps.
	StopDeadline = 30 * time.Second
	// Rotation bounds of the dump directory.
	MaxFiles      = 100
	MaxTotalBytes = 10 << 30
	MinFreeDisk   = 512 << 20
	// HookTimeout bounds one run of the exec hook.
	HookTimeout = 5 * time.Minute
)

// Sources and control.
const (
	// UDPRcvBuf is a UDP source's socket receive buffer: room for a burst
	// of about 2700 full-size (1500-byte) datagrams while the recorder is
	// descheduled, where the kernel's usual 208 KiB holds about 140.
	UDPRcvBuf = 4 << 20
	// UDPMaxPacket is the largest datagram a UDP source keeps whole (jumbo
	// frames).
	UDPMaxPacket = 9216
	// UDPTopic is a UDP source's topic template.
	UDPTopic = "udp/{dport}"
	// ControlSocket is the control socket "edr-lite trigger" and "status"
	// talk to.
	ControlSocket = "/run/edr-lite.sock"
)

// Camera files read by the offline verbs (internal/dumpfile's jpeg-dir and
// mp4 formats; docs/media.md).
const (
	// MediaTopicPrefix: a JPEG folder or an MP4 file read without a topic
	// (an input of merge, replay, info, ...) is the topic MediaTopicPrefix
	// + its base name without extension ("front/" is "camera/front",
	// "rear.mp4" "camera/rear").
	MediaTopicPrefix = "camera/"
	// JPEGTimeSources are the time sources of a JPEG folder's frames, in
	// the order they are tried.
	JPEGTimeSources = "name,exif"
)
