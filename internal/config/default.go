package config

import (
	_ "embed"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/units"
)

//go:embed default.toml.tmpl
var defaultTmpl string

// defaultValues are the values the commented default file shows: the one
// table of defaults (internal/defaults/defaults.go), nothing written here.
var defaultValues = struct {
	DumpDir, Format, Compression, Coalesce, UDPTopic, ControlSocket               string
	CacheSize, MaxPacket, TopicBytes, MaxTotalBytes, MinFreeDisk, UDPRcvBuf       int64
	FrameSize, DumpsPerMinute, ManualPerMinute, MaxFiles, UDPMaxPacket, MaxTopics int
	Pre, Post, Guard, ReorderWindow, StopDeadline, HookTimeout                    time.Duration
	Upload                                                                        Upload
	UploadPartSize                                                                int64
	UploadRetryMin, UploadRetryMax, UploadStall                                   time.Duration
	EventOrderWindow                                                              time.Duration
	EventOrderMaxMessages                                                         int
	EventOrderMaxBytes                                                            int64
}{
	DumpDir: defaults.DumpDir, Format: defaults.Format, Compression: defaults.Compression, Coalesce: defaults.Coalesce,
	UDPTopic: defaults.UDPTopic, ControlSocket: defaults.ControlSocket,
	CacheSize: defaults.CacheSize, MaxPacket: defaults.MaxPacket, TopicBytes: defaults.TopicBytes,
	MaxTotalBytes: defaults.MaxTotalBytes, MinFreeDisk: defaults.MinFreeDisk, UDPRcvBuf: defaults.UDPRcvBuf,
	FrameSize: defaults.FrameSize, DumpsPerMinute: defaults.DumpsPerMinute, ManualPerMinute: defaults.ManualPerMinute,
	MaxFiles: defaults.MaxFiles, UDPMaxPacket: defaults.UDPMaxPacket, MaxTopics: defaults.MaxTopics,
	Pre: defaults.Pre, Post: defaults.Post, Guard: defaults.Guard, ReorderWindow: defaults.ReorderWindow,
	StopDeadline: defaults.StopDeadline, HookTimeout: defaults.HookTimeout,
	Upload: uploadDefaults(), UploadPartSize: int64(uploadDefaults().PartSize),
	UploadRetryMin: uploadDefaults().RetryMin.D(), UploadRetryMax: uploadDefaults().RetryMax.D(),
	UploadStall:      uploadDefaults().StallTimeout.D(),
	EventOrderWindow: defaults.EventOrderWindow, EventOrderMaxMessages: defaults.EventOrderMaxMessages,
	EventOrderMaxBytes: defaults.EventOrderMaxBytes,
}

// defaultText renders the default configuration on first use (every verb
// of the binary would pay for the template at start otherwise).
var defaultText = sync.OnceValue(func() string {
	t := template.Must(template.New("default.toml").Funcs(template.FuncMap{
		"size": func(n any) string {
			switch v := n.(type) {
			case int64:
				return units.FormatSize(v)
			case int:
				return units.FormatSize(int64(v))
			}
			panic("BUG: config: size of a non-integer")
		},
		"dur": units.FormatDuration,
	}).Parse(defaultTmpl))
	var b strings.Builder
	if err := t.Execute(&b, defaultValues); err != nil {
		panic("BUG: config: default.toml.tmpl: " + err.Error())
	}
	return b.String()
})

// Default returns the fully commented default configuration, rendered
// from the one table of defaults.
func Default() string { return defaultText() }
