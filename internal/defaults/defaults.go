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
	// FrameSize is the data size at which a dump's frame is closed, and
	// FrameSpan the time it may span: a message captured FrameSpan or more
	// after a frame's first starts the next. A frame is what one damaged
	// byte or a cut costs; docs/pack.md has the measurements these bounds
	// were chosen from.
	FrameSize = 1 << 20
	FrameSpan = 250 * time.Millisecond
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
	// ShmReadInterval is how often an shm source reads its busy segments,
	// all together (shm.ConsumerOptions.Sweep): one wake-up of the
	// recorder per interval whatever the number of busy topics and
	// messages, instead of one per message (docs/performance.md, "The
	// whole-recorder budget").
	ShmReadInterval = time.Millisecond
	// ControlSocket is the control socket "edr-lite trigger" and "status"
	// talk to.
	ControlSocket = "/run/edr-lite.sock"
)

// Camera files read by the offline verbs (dumpfile's jpeg-dir and
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

// The live server ([live]; package live, docs/live.md): Foxglove's
// WebSocket protocol served from the rings. Off while live.listen is "".
const (
	// LiveAddr is the address "demo --live" listens on and "config init"
	// suggests: loopback, Foxglove's usual port.
	LiveAddr = "127.0.0.1:8765"
	// LiveMaxClients bounds the clients connected at once.
	LiveMaxClients = 8
	// LiveMaxSubscriptions bounds one client's subscriptions.
	LiveMaxSubscriptions = 1024
	// LiveMaxClientMessage bounds one message a client sends (a request or
	// a published message); a larger one closes the connection.
	LiveMaxClientMessage = 1 << 20
	// LiveQueue bounds the bytes of messages waiting to be sent to one
	// client; what does not fit is dropped and counted.
	LiveQueue = 16 << 20
	// LiveStallTimeout is how long a client's queue may stay full (it
	// takes nothing) before the client is disconnected.
	LiveStallTimeout = 10 * time.Second
	// LiveHistory is the history a subscription gets when the client does
	// not ask (0: live messages only).
	LiveHistory = 0 * time.Second
	// LivePublishTopics is the glob clients may publish on when
	// live.client_publish is on.
	LivePublishTopics = "operator/*"
)

// LiveOrigins are the web origins whose pages may open the live server
// beside its own host: Foxglove's web app.
var LiveOrigins = []string{"app.foxglove.dev"}

// CAN buses (package can; docs/can.md).
const (
	// CANTopicPrefix: a bus's frames are the topic CANTopicPrefix + its
	// name ("can/can0") unless it names one; its error frames are that
	// topic + CANErrorSuffix, its DBC messages that topic + "/" + the
	// message's name.
	CANTopicPrefix = "can/"
	CANErrorSuffix = "/errors"
	// CANMaxUndecodableIDs is how many distinct identifiers a bus names
	// among the frames its DBC could not decode (status, dump accounting).
	CANMaxUndecodableIDs = 8
	// CANMaxDBCBytes bounds a DBC file (real ones are a few MiB at most).
	CANMaxDBCBytes = 32 << 20
	// CANMaxIDTopics bounds the per-ID topics of a bus (per_id).
	CANMaxIDTopics = 2048
	// CANMaxBuses bounds the buses one CAN-over-Ethernet source creates
	// (hostile or misconfigured modules).
	CANMaxBuses = 64
	// CANProtocol is the protocol of a CAN-over-Ethernet source: ASAM CMP.
	CANProtocol = "cmp"
)
