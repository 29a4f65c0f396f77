package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/scripts"
	"github.com/edr-lite/edr-lite/shm"
	"github.com/edr-lite/edr-lite/upload"
)

// Options configure a Daemon.
type Options struct {
	// Config is the parsed configuration file.
	Config *config.File
	// Logger receives operational logs (nil: slog.Default()).
	Logger *slog.Logger
	// Clock drives the recorder (nil: the engine's coarse system clock).
	Clock clock.Clock
	// Version names the writer in dump headers.
	Version string
	// OnDump, when set, is called after every finalized (or failed) dump,
	// on the recorder's hook goroutine.
	OnDump func(dump.Result)
}

// Daemon is a running recorder with its sources, rules and control.
type Daemon struct {
	cfg     *config.File
	log     *slog.Logger
	opts    Options
	rec     *engine.Recorder
	dumper  *dump.Dumper
	shms    []*shm.Consumer
	udps    []*capture.UDPSource
	raws    []*capture.RawSource
	cans    []*canSource // [[source.can]] (can.go)
	rules   []*scripts.Rule
	live    *scripts.Live
	ctl     *control.Server
	started time.Time
	// uploader is the upload queue, nil when [upload] is off (upload.go).
	uploader *upload.Uploader
	// the HTTP listener and the live server (http.go; none in the ECU
	// build: nohttp.go)
	httpParts

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	liveMu  sync.Mutex // guards live for the hook goroutine
	owners  *owners    // which network source feeds each topic

	srcMu      sync.Mutex
	srcStopped map[string]error // network sources whose loop ended, by key (sources.go)
}

// New builds the recorder and every source, rule and listener named by the
// configuration. On failure everything acquired so far is released.
func New(opts Options) (d *Daemon, err error) {
	if opts.Config == nil {
		return nil, errors.New("daemon: no configuration")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "edr-lite"
	}
	if err := Check(opts.Config); err != nil {
		return nil, err
	}
	// before anything is built: a shm directory run creates was missing
	for _, w := range Warnings(opts.Config) {
		opts.Logger.Warn("configuration: " + w.Error())
	}
	d = &Daemon{cfg: opts.Config, log: opts.Logger, opts: opts, owners: newOwners(), srcStopped: map[string]error{}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	built := d // "return nil, err" clears d before this runs
	defer func() {
		if err != nil {
			built.release()
		}
	}()
	ec, dc, err := recorderConfig(opts.Config, opts.Logger)
	if err != nil {
		return nil, err
	}
	ec.Clock = opts.Clock
	check := ec.CheckType
	ec.CheckType = func(info ingest.TopicInfo) error {
		err := check(info)
		if err != nil {
			d.log.Warn("topic type refused, recording it as raw bytes", "topic", info.Name, "channel", info.Channel,
				"source", info.Source, "type", info.Type.String(), "err", err)
		}
		return err
	}
	dc.WriterName = opts.Version
	dc.Hooks = []dump.Hook{dump.HookFunc(d.dumpFinished)}
	if t := d.canTransform(); t != nil { // CAN frames by DBC in the dump's accounting
		dc.Transforms = append(dc.Transforms, t)
	}
	if err := d.newUploader(&dc); err != nil {
		return nil, err
	}
	if d.rec, err = engine.New(ec); err != nil {
		return nil, err
	}
	if d.dumper, err = dump.New(d.rec, dc); err != nil {
		return nil, err
	}
	for i, s := range opts.Config.Sources.SHM {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("source.shm[%d]: %w", i, err)
		}
		uids := make([]uint32, len(s.AllowUIDs))
		for j, u := range s.AllowUIDs {
			uids[j] = uint32(u)
		}
		dir := s.Dir
		c, err := shm.NewConsumer(s.Dir, d.rec, shm.ConsumerOptions{AllowUIDs: uids,
			HeartbeatTimeout: s.Heartbeat.D(), MaxSegments: maxTopics(ec), Sweep: s.Read(),
			OnError: func(err error) {
				var te *shm.TypeError
				if errors.As(err, &te) {
					d.log.Warn("shm segment's type not used, recording it as raw bytes", "dir", dir, "topic", te.Topic, "err", err)
					return
				}
				d.log.Warn("shm segment not recorded", "dir", dir, "err", err)
			},
			OnLeftover: func(st shm.SegmentStats) {
				d.log.Info("shm leftover segment read, not recorded: its producer finished before the recorder found it",
					"segment", st.Path, "topic", st.Topic.Name, "channel", st.Topic.Channel, "messages", st.Messages, "bytes", st.Bytes)
			}})
		if err != nil {
			return nil, fmt.Errorf("source.shm[%d] (%s): %w", i, s.Dir, err)
		}
		d.shms = append(d.shms, c)
	}
	for i, s := range opts.Config.Sources.UDP {
		addr := s.Listen
		if s.Group != "" {
			_, port, err := net.SplitHostPort(s.Listen)
			if err != nil {
				return nil, fmt.Errorf("source.udp[%d].listen %q: %w", i, s.Listen, err)
			}
			addr = net.JoinHostPort(s.Group, port)
		}
		rcvbuf := int(defaults.UDPRcvBuf)
		if s.RcvBuf != nil {
			rcvbuf = int(*s.RcvBuf)
		}
		key := fmt.Sprintf("source.udp[%d]", i)
		u, err := capture.NewUDP(capture.UDPOptions{Addr: addr, Interface: s.Interface, Topic: s.Topic, Type: s.Type,
			RcvBuf: rcvbuf, MaxPacket: int(s.MaxPacket), GRO: s.GRO, Channel: s.Channel}, d.sourceSink(key))
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", key, addr, err)
		}
		if got, err := u.RcvBuf(); err == nil && got/2 < rcvbuf {
			// the kernel reports twice what it grants; less than asked
			// means net.core.rmem_max capped it (no CAP_NET_ADMIN)
			d.log.Warn("UDP receive buffer smaller than configured: bursts may be dropped (counted); raise net.core.rmem_max or run with CAP_NET_ADMIN",
				"source", key, "rcvbuf", rcvbuf, "granted", got/2)
		}
		d.udps = append(d.udps, u)
	}
	for i, s := range opts.Config.Sources.Raw {
		ro := capture.RawOptions{Interface: s.Interface, Topic: s.Topic, Promiscuous: s.Promiscuous, Channel: s.Channel, Type: s.Type}
		if s.Payload == "udp" {
			ro.Payload = capture.PayloadUDP
		}
		f, err := rawFilter(s.Filter)
		if err != nil {
			return nil, fmt.Errorf("source.raw[%d].filter: %w", i, err)
		}
		ro.Filter = f
		r, err := capture.NewRaw(ro, d.sourceSink(fmt.Sprintf("source.raw[%d]", i)))
		if err != nil {
			return nil, fmt.Errorf("source.raw[%d] (%s): %w", i, s.Interface, err)
		}
		d.raws = append(d.raws, r)
	}
	if err := d.openCAN(); err != nil {
		return nil, err
	}
	for i, rc := range opts.Config.Rules {
		r, err := d.loadRule(rc)
		if err != nil {
			return nil, fmt.Errorf("rule[%d]: %w", i, err)
		}
		d.rules = append(d.rules, r)
	}
	if p := opts.Config.Control.Socket; p != "" {
		if d.ctl, err = control.Listen(p, control.HandlerFunc(d.handle)); err != nil {
			return nil, fmt.Errorf("control.socket: %w", err)
		}
	}
	if err := d.newHTTP(); err != nil {
		return nil, err
	}
	if err := d.newLive(); err != nil {
		return nil, err
	}
	return d, nil
}

// maxTopics is the recorder's topic table size: each shm source follows
// at most as many segments.
func maxTopics(ec engine.Config) int {
	if ec.MaxTopics > 0 {
		return ec.MaxTopics
	}
	return engine.DefaultMaxTopics
}

// RecorderConfig maps the configuration file onto the recorder's and the
// dump pipeline's configurations. Every value is the file's (the file was
// decoded over the one table of defaults): zero windows are zero.
func RecorderConfig(f *config.File) (engine.Config, dump.Config, error) {
	return recorderConfig(f, slog.Default())
}

// recorderConfig is RecorderConfig with the logger the dump transforms
// report to.
func recorderConfig(f *config.File, log *slog.Logger) (engine.Config, dump.Config, error) {
	r := f.Recorder
	ec := engine.Config{
		CacheSize:        int64(r.CacheSize),
		LockMemory:       r.Mlock,
		Pre:              new(r.Pre.D()),
		Post:             new(r.Post.D()),
		Guard:            new(r.Guard.D()),
		TopicBytes:       int64(r.TopicBytes),
		MaxPacket:        int(r.MaxPacket),
		Include:          r.Include,
		Exclude:          r.Exclude,
		DestroyOnOffline: r.DestroyOnOffline,
		BusySkipData:     r.BusySkipData,
		MaxTopics:        r.MaxTopics,
	}
	mode, err := r.FileMode()
	if err != nil {
		return ec, dump.Config{}, err
	}
	dc := dump.Config{
		Dir:                r.DumpDir,
		FileMode:           mode,
		Group:              r.DumpGroup,
		MaxFiles:           f.Rotation.MaxFiles,
		MaxTotalBytes:      int64(f.Rotation.MaxTotalBytes),
		MinFreeDisk:        int64(f.Rotation.MinFreeDisk),
		Compression:        r.Compression,
		FrameSize:          int(r.FrameTargetSize),
		Policy:             dump.Policy(r.Coalesce),
		MaxPerMinute:       r.MaxDumpsPerMinute,
		MaxManualPerMinute: r.MaxManualPerMinute,
		StopTimeout:        r.StopDeadline.D(),
	}
	if r.Reorder {
		dc.ReorderWindow = r.ReorderWindow.D()
		if dc.ReorderWindow <= 0 {
			return ec, dc, fmt.Errorf("recorder.reorder_window must be > 0 when reorder = true")
		}
	}
	if et := newEventTimes(f); et != nil {
		et.log = log
		dc.Transforms = append(dc.Transforms, et.order(f))
	}
	for _, t := range f.Topics {
		o := engine.TopicOverride{Match: t.Match, OnlyFront: t.OnlyFront, OnlyBack: t.OnlyBack, KeepLast: t.KeepLast, Type: t.Type}
		if t.Pre != nil {
			o.Pre = new(t.Pre.D())
		}
		if t.Post != nil {
			o.Post = new(t.Post.D())
		}
		if t.MaxPacket != nil {
			o.MaxPacket = int(*t.MaxPacket)
		}
		if t.MaxBytes != nil {
			o.MaxBytes = int64(*t.MaxBytes)
		}
		ec.Topics = append(ec.Topics, o)
	}
	ec.CheckType = newTypeChecker().check
	switch r.Format {
	case "pack", "":
	case "mcap":
		dc.Extension = dump.MCAPExt
		dc.NewWriter = dump.MCAPWriter(r.MCAPKeepPacked)
	default:
		return ec, dc, fmt.Errorf("recorder.format = %q: want pack or mcap", r.Format)
	}
	if err := evidenceConfig(f, &dc); err != nil { // after the format: encryption wraps its writer
		return ec, dc, err
	}
	return ec, dc, nil
}

// typeChecker checks topic types as the recorder is told them
// (schema.Check: layouts compile, descriptor sets build and hold their
// message, JSON Schemas parse), once per distinct type: producers that
// restart declare the same schema again.
type typeChecker struct {
	mu   sync.Mutex
	seen map[ingest.ContentID]error
}

// maxCheckedTypes bounds the checker's memory (hostile producers declaring
// ever new schemas): past it the cache starts again.
const maxCheckedTypes = 1024

func newTypeChecker() *typeChecker { return &typeChecker{seen: map[ingest.ContentID]error{}} }

func (c *typeChecker) check(info ingest.TopicInfo) error {
	if err := info.Type.Validate(); err != nil {
		return err // cheap, and bounds what is hashed below
	}
	id := info.Type.ID()
	c.mu.Lock()
	err, ok := c.seen[id]
	c.mu.Unlock()
	if ok {
		return err
	}
	err = schema.Check(info.Type)
	c.mu.Lock()
	if len(c.seen) >= maxCheckedTypes {
		clear(c.seen)
	}
	c.seen[id] = err
	c.mu.Unlock()
	return err
}

func rawFilter(f config.RawFilter) (*capture.Filter, error) {
	if f.EtherType == 0 && f.VLAN == 0 && f.IPProto == 0 && len(f.SrcPorts) == 0 && len(f.DstPorts) == 0 && f.Multicast == "" {
		return nil, nil
	}
	out := &capture.Filter{EtherType: uint16(f.EtherType), VLAN: uint16(f.VLAN), IPProto: uint8(f.IPProto)}
	var err error
	if out.SrcPorts, err = portRanges("src_ports", f.SrcPorts); err != nil {
		return nil, err
	}
	if out.DstPorts, err = portRanges("dst_ports", f.DstPorts); err != nil {
		return nil, err
	}
	if f.Multicast != "" {
		if out.MulticastGroup, err = netip.ParseAddr(f.Multicast); err != nil {
			return nil, fmt.Errorf("multicast: %w", err)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

func portRanges(field string, in []string) ([]capture.PortRange, error) {
	var out []capture.PortRange
	for _, s := range in {
		lo, hi, _ := strings.Cut(s, "-")
		if hi == "" {
			hi = lo
		}
		l, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		h, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		if err1 != nil || err2 != nil || l > h {
			return nil, fmt.Errorf("%s: %q is not a port or a range like 30490-30500", field, s)
		}
		out = append(out, capture.PortRange{Lo: uint16(l), Hi: uint16(h)})
	}
	return out, nil
}

func (d *Daemon) loadRule(rc config.Rule) (*scripts.Rule, error) {
	return loadRule(rc, scripts.Options{OnTrigger: d.ruleTriggered, Logger: d.log})
}

// loadRule loads the rule rc names with opts plus rc's params and time.
func loadRule(rc config.Rule, opts scripts.Options) (*scripts.Rule, error) {
	opts.Params, opts.Time, opts.Name = rc.Params, rc.Time, rc.InstanceName
	opts.Budget.Instructions = rc.Instructions
	if rc.Name != "" {
		return scripts.LoadShipped(rc.Name, opts)
	}
	return scripts.Load(rc.File, opts)
}

// Recorder returns the engine (for tests and the demo).
func (d *Daemon) Recorder() *engine.Recorder { return d.rec }

// Start starts the recorder, the sources, the rules and the listeners.
func (d *Daemon) Start() error {
	d.started = time.Now()
	if d.uploader != nil { // first: rotation asks it what to keep
		if err := d.uploader.Start(); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
	}
	if err := d.dumper.Start(); err != nil {
		return err
	}
	for _, c := range d.shms {
		if err := c.Start(); err != nil {
			return err
		}
	}
	for i, u := range d.udps {
		d.runSource(fmt.Sprintf("source.udp[%d]", i), u.Run)
	}
	for i, r := range d.raws {
		d.runSource(fmt.Sprintf("source.raw[%d]", i), r.Run)
	}
	for i, c := range d.cans {
		d.runSource(fmt.Sprintf("source.can[%d]", i), c.run)
	}
	d.watchSources()
	if len(d.rules) > 0 {
		live, err := scripts.StartLive(d.rec, d.rules, scripts.LiveOptions{})
		if err != nil {
			return err
		}
		d.liveMu.Lock()
		d.live = live
		d.liveMu.Unlock()
	}
	d.startHTTP()
	d.startLive()
	for _, t := range d.dumper.Status().LeftoverRemoved {
		d.log.Warn("empty leftover of a dump an earlier run left interrupted (nothing to salvage); removed", "file", t)
	}
	for _, t := range d.dumper.Status().LeftoverTmp {
		d.log.Warn("leftover incomplete dump from an earlier run, kept as "+dump.InterruptedExt+"; salvage with edr-lite recover", "file", t,
			"salvage", "edr-lite recover "+t+" -o "+dump.LeftoverName(t))
	}
	if ds := d.dumper.Status(); ds.SigningKey != "" {
		d.log.Info("dumps are signed and chained", "key_id", ds.SigningKey, "chain", ds.Chain, "last", ds.ChainHead)
		for _, n := range ds.ChainNotes {
			d.log.Warn("chain: " + n)
		}
	}
	d.log.Info("recording", "dump_dir", d.cfg.Recorder.DumpDir, "cache", d.cfg.Recorder.CacheSize,
		"shm_sources", len(d.shms), "udp_sources", len(d.udps), "raw_sources", len(d.raws), "rules", len(d.rules))
	return nil
}

// ruleTriggered hands a rule's trigger to the recorder (on the rule's
// goroutine; Trigger returns at once).
func (d *Daemon) ruleTriggered(t scripts.Trigger) {
	p := dump.TriggerParams{Reason: t.Reason, Source: dumpinfo.SourceLua, Rule: t.Rule, TimeNs: t.TimeNs,
		At: t.At, Pre: t.Pre, Post: t.Post, Topics: t.Topics, Tag: t.Tag, Severity: t.Severity, Params: t.Params}
	id, err := d.dumper.Trigger(p)
	if err != nil {
		d.log.Warn("rule trigger not accepted", "rule", t.Rule, "reason", t.Reason, "err", err)
		return
	}
	d.log.Info("trigger", "id", id, "rule", t.Rule, "reason", t.Reason, "time", time.Unix(0, t.TimeNs).UTC())
}

// Trigger asks for a dump; with wait it blocks until the dump is finalized.
// A refused trigger is logged and counted (Status) and its error says why.
func (d *Daemon) Trigger(ctx context.Context, p dump.TriggerParams, wait bool) (dump.TriggerID, dump.Result, error) {
	id, err := d.dumper.Trigger(p)
	if err != nil {
		d.log.Warn("trigger refused", "source", p.Source, "reason", p.Reason, "err", err)
	}
	if err != nil || !wait {
		return id, dump.Result{}, err
	}
	res, err := d.dumper.Wait(ctx, id)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return id, res, err
}

// dumpFinished runs on the recorder's hook goroutine for every dump, written
// or not: the log, Lua's on_dump_finished, Options.OnDump and the exec hook
// all hear every outcome.
func (d *Daemon) dumpFinished(res dump.Result) {
	if res.Err != nil {
		d.log.Error("dump not written", "status", res.Status, "reasons", res.Reasons, "window", window(res.StartNs, res.EndNs), "err", res.Err)
	} else {
		d.log.Info("dump written", "path", res.Path, "bytes", res.Bytes, "messages", res.Messages,
			"overwritten", res.Lost, "lost_at_source", res.LostAtSource, "oversize", res.Oversize, "skipped_busy", res.SkippedBusy, "late", res.Late,
			"rewritten", res.Rewritten, "reasons", res.Reasons)
	}
	d.liveMu.Lock()
	live := d.live
	d.liveMu.Unlock()
	if live != nil {
		live.DumpFinished(scripts.DumpResult{Path: res.Path, Reason: strings.Join(res.Reasons, ","), Bytes: res.Bytes,
			Messages: int64(res.Messages), Status: res.Status, Err: res.Err})
	}
	d.enqueueUpload(res)
	if d.opts.OnDump != nil {
		d.opts.OnDump(res)
	}
	if len(d.cfg.Hooks.Exec) > 0 {
		d.execHook(res)
	}
}

// window renders a dump's window for logs.
func window(from, to int64) string {
	if from == 0 && to == 0 {
		return ""
	}
	return time.Unix(0, from).UTC().Format(time.RFC3339Nano) + " to " + time.Unix(0, to).UTC().Format(time.RFC3339Nano)
}

// execHook runs the configured command: with the dump path appended for a
// written dump; without it, and with EDR_DUMP_ERROR, for one that was not.
// EDR_DUMP_STATUS tells which.
func (d *Daemon) execHook(res dump.Result) {
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.Hooks.Timeout.D())
	defer cancel()
	args := append([]string(nil), d.cfg.Hooks.Exec[1:]...)
	if res.Path != "" {
		args = append(args, res.Path)
	}
	cmd := exec.CommandContext(ctx, d.cfg.Hooks.Exec[0], args...)
	cmd.Env = append(os.Environ(), "EDR_DUMP_STATUS="+res.Status, "EDR_DUMP_PATH="+res.Path,
		"EDR_DUMP_REASONS="+strings.Join(res.Reasons, ","), "EDR_DUMP_BYTES="+strconv.FormatInt(res.Bytes, 10))
	if res.Err != nil {
		cmd.Env = append(cmd.Env, "EDR_DUMP_ERROR="+res.Err.Error())
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.log.Error("dump hook failed", "cmd", d.cfg.Hooks.Exec, "status", res.Status, "path", res.Path, "err", err, "output", strings.TrimSpace(string(out)))
		return
	}
	d.log.Info("dump hook done", "cmd", d.cfg.Hooks.Exec[0], "status", res.Status, "path", res.Path)
}

// Reload reloads every rule from its file; a broken new version keeps the
// old one running and is reported in the error.
func (d *Daemon) Reload() error {
	d.liveMu.Lock()
	live := d.live
	d.liveMu.Unlock()
	if live == nil {
		return errors.New("no rules are running")
	}
	var errs []error
	for _, r := range d.rules {
		if err := live.Reload(r.Name()); err != nil {
			if !strings.Contains(err.Error(), "reload "+r.Name()+":") { // else it names the rule already
				err = fmt.Errorf("reload %s: %w", r.Name(), err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops rules and sources, finishes pending dumps within the
// configured deadline and releases everything. It is idempotent.
func (d *Daemon) Stop() {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.stopped = true
	d.mu.Unlock()
	d.liveMu.Lock()
	live := d.live
	d.liveMu.Unlock()
	// Rules stop alongside the dump pipeline, not before it: a rule stuck
	// in a callback is abandoned after stop_deadline (a rule looping in
	// Lua is stopped at once), so the pending dump is still written and
	// the process exits on time whatever a rule does.
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if live != nil && !live.CloseWithin(d.cfg.Recorder.StopDeadline.D()) {
			d.log.Error("stopping with a rule stuck in a callback (abandoned)")
		}
	}()
	d.cancel()
	d.closeSources()
	if d.dumper != nil {
		d.dumper.Stop()
	}
	<-liveDone
	d.release()
	d.wg.Wait()
}

// closeSources stops every source; closing one twice is harmless.
func (d *Daemon) closeSources() {
	for _, c := range d.shms {
		c.Close()
	}
	for _, u := range d.udps {
		u.Close()
	}
	for _, r := range d.raws {
		r.Close()
	}
	for _, c := range d.cans {
		c.close()
	}
}

// release closes listeners and the recorder (also used to roll back New).
func (d *Daemon) release() {
	d.cancel()
	if d.ctl != nil {
		d.ctl.Close()
	}
	d.stopHTTP()
	if d.live == nil {
		for _, r := range d.rules {
			r.Close()
		}
	}
	d.stopLive() // its clients may publish: a source
	d.closeSources()
	if d.dumper != nil {
		d.dumper.Stop()
	}
	if d.uploader != nil {
		d.uploader.Stop()
	}
	if d.rec != nil {
		d.rec.Close()
	}
}

// handle serves one control-socket request.
func (d *Daemon) handle(ctx context.Context, req *control.Request) *control.Response {
	switch req.Op {
	case "trigger":
		p := dump.TriggerParams{Reason: req.Reason, Source: dumpinfo.SourceCommand, Topics: req.Topics, Tag: req.Tag, At: req.At}
		if p.Reason == "" {
			p.Reason = "manual"
		}
		var err error
		if p.Pre, err = optDuration("pre", req.Pre); err != nil {
			return &control.Response{Error: err.Error()}
		}
		if p.Post, err = optDuration("post", req.Post); err != nil {
			return &control.Response{Error: err.Error()}
		}
		if req.Timeout != "" {
			t, err := optDuration("timeout", req.Timeout)
			if err != nil {
				return &control.Response{Error: err.Error()}
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *t)
			defer cancel()
		}
		id, res, err := d.Trigger(ctx, p, !req.NoWait)
		resp := &control.Response{OK: err == nil, ID: uint64(id), Path: res.Path, Bytes: res.Bytes}
		if err != nil {
			resp.Error = err.Error()
		}
		if res.Status != "" {
			resp.Dump = &control.Dump{Status: res.Status, Messages: res.Messages, StartNs: res.StartNs, EndNs: res.EndNs,
				Merged: len(res.Triggers) > 0 && res.Triggers[0] != id, Triggers: res.Records,
				Overwritten: res.Lost, LostAtSource: res.LostAtSource, Oversize: res.Oversize, SkippedBusy: res.SkippedBusy, Late: res.Late}
		}
		return resp
	case "status":
		b, err := json.Marshal(d.Status())
		if err != nil {
			return &control.Response{Error: err.Error()}
		}
		return &control.Response{OK: true, Status: b}
	case "reload":
		if err := d.Reload(); err != nil {
			return &control.Response{Error: err.Error()}
		}
		return &control.Response{OK: true}
	}
	return &control.Response{Error: fmt.Sprintf("unknown op %q (want trigger, status or reload)", req.Op)}
}

// optDuration parses an optional duration of the control protocol: ""
// is unset (nil), "0s" zero.
func optDuration(field, s string) (*time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	v, err := units.ParseDuration(s)
	if err != nil || v < 0 {
		return nil, fmt.Errorf("%s: bad duration %q", field, s)
	}
	return &v, nil
}
