package config

import (
	_ "embed"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	Live                                                                          Live
	LiveAddr                                                                      string
	LiveMaxClientMessage, LiveQueue                                               int64
	LiveStallTimeout, LiveHistory                                                 time.Duration
	ShmReadInterval                                                               time.Duration
	CANTopicPrefix, CANProtocol                                                   string
	CANMaxIDTopics, CANMaxBuses                                                   int
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
	Live:               liveDefaults(), LiveAddr: defaults.LiveAddr,
	LiveMaxClientMessage: defaults.LiveMaxClientMessage, LiveQueue: defaults.LiveQueue,
	LiveStallTimeout: defaults.LiveStallTimeout, LiveHistory: defaults.LiveHistory,
	ShmReadInterval: defaults.ShmReadInterval,
	CANTopicPrefix:  defaults.CANTopicPrefix, CANProtocol: defaults.CANProtocol,
	CANMaxIDTopics: defaults.CANMaxIDTopics, CANMaxBuses: defaults.CANMaxBuses,
}

// defaultText renders the default configuration on first use (every verb
// of the binary would pay for it at start otherwise). The template's
// placeholders are {{.Field}}, {{size .Field}}, {{dur .Field}} and {{list
// .Field}} (a TOML array of strings), a Field a path of defaultValues'
// fields ("Live.Origins"). Not text/template: its method lookups make the
// linker keep every exported method of every type in the binary (2.2 MB of
// the ECU build, docs/ecu.md).
var defaultText = sync.OnceValue(func() string {
	root := reflect.ValueOf(defaultValues)
	out := placeholder.ReplaceAllStringFunc(defaultTmpl, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		v := root
		for _, name := range strings.Split(sub[2], ".") {
			if v = v.FieldByName(name); !v.IsValid() {
				panic("BUG: config: default.toml.tmpl: no value " + sub[2])
			}
		}
		switch sub[1] {
		case "size":
			return units.FormatSize(v.Int())
		case "dur":
			return units.FormatDuration(time.Duration(v.Int()))
		case "list":
			q := make([]string, v.Len())
			for k := range q {
				q[k] = strconv.Quote(v.Index(k).String())
			}
			return strings.Join(q, ", ")
		}
		return fmt.Sprint(v.Interface())
	})
	if strings.Contains(out, "{{") {
		panic("BUG: config: default.toml.tmpl: a placeholder not understood near " + out[strings.Index(out, "{{"):][:40])
	}
	return out
})

// placeholder is a placeholder of default.toml.tmpl (see defaultText).
var placeholder = regexp.MustCompile(`\{\{(?:(size|dur|list) )?\.([A-Za-z.]+)\}\}`)

// Default returns the fully commented default configuration, rendered
// from the one table of defaults.
func Default() string { return defaultText() }
