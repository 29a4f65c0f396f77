package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
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
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/control"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/scripts"
	"github.com/edr-lite/edr-lite/shm"
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
	rules   []*scripts.Rule
	live    *scripts.Live
	ctl     *control.Server
	httpSrv *http.Server
	httpLn  net.Listener
	started time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	stopped  bool
	liveMu   sync.Mutex // guards live for the hook goroutine
	ruleErrs []string
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
	d = &Daemon{cfg: opts.Config, log: opts.Logger, opts: opts}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	built := d // "return nil, err" clears d before this runs
	defer func() {
		if err != nil {
			built.release()
		}
	}()
	ec, dc, err := RecorderConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	ec.Clock = opts.Clock
	dc.WriterName = opts.Version
	dc.Hooks = []dump.Hook{dump.HookFunc(d.dumpFinished)}
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
		c, err := shm.NewConsumer(s.Dir, d.rec, shm.ConsumerOptions{AllowUIDs: uids, OnError: func(err error) {
			d.log.Warn("shm segment not recorded", "dir", dir, "err", err)
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
		u, err := capture.NewUDP(capture.UDPOptions{Addr: addr, Interface: s.Interface, Topic: s.Topic, Type: s.Type,
			RcvBuf: int(s.RcvBuf), MaxPacket: int(s.MaxPacket), GRO: s.GRO,
			Channel: udpChannel(i, len(opts.Config.Sources.UDP))}, d.rec)
		if err != nil {
			return nil, fmt.Errorf("source.udp[%d] (%s): %w", i, addr, err)
		}
		d.udps = append(d.udps, u)
	}
	for i, s := range opts.Config.Sources.Raw {
		ro := capture.RawOptions{Interface: s.Interface, Topic: s.Topic, Promiscuous: s.Promiscuous,
			Channel: rawChannel(i, len(opts.Config.Sources.Raw))}
		if s.Payload == "udp" {
			ro.Payload = capture.PayloadUDP
		}
		f, err := rawFilter(s.Filter)
		if err != nil {
			return nil, fmt.Errorf("source.raw[%d].filter: %w", i, err)
		}
		ro.Filter = f
		r, err := capture.NewRaw(ro, d.rec)
		if err != nil {
			return nil, fmt.Errorf("source.raw[%d] (%s): %w", i, s.Interface, err)
		}
		d.raws = append(d.raws, r)
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
	if a := opts.Config.Control.HTTP; a != "" {
		if d.httpLn, err = net.Listen("tcp", a); err != nil {
			return nil, fmt.Errorf("control.http: %w", err)
		}
		d.httpSrv = &http.Server{Handler: d.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
	}
	return d, nil
}

func udpChannel(i, n int) string {
	if n <= 1 {
		return ""
	}
	return "udp" + strconv.Itoa(i)
}

func rawChannel(i, n int) string {
	if n <= 1 {
		return ""
	}
	return "raw" + strconv.Itoa(i)
}

// RecorderConfig maps the configuration file onto the recorder's and the
// dump pipeline's configurations.
func RecorderConfig(f *config.File) (engine.Config, dump.Config, error) {
	r := f.Recorder
	ec := engine.Config{
		CacheSize:        int64(r.CacheSize),
		LockMemory:       r.Mlock,
		Pre:              r.Pre.D(),
		Post:             r.Post.D(),
		Guard:            r.Guard.D(),
		TopicBytes:       int64(r.TopicBytes),
		MaxPacket:        int(r.MaxPacket),
		Include:          r.Include,
		Exclude:          r.Exclude,
		DestroyOnOffline: r.DestroyOnOffline,
		BusySkipData:     r.BusySkipData,
	}
	dc := dump.Config{
		Dir:           r.DumpDir,
		MaxFiles:      f.Rotation.MaxFiles,
		MaxTotalBytes: int64(f.Rotation.MaxTotalBytes),
		MinFreeDisk:   int64(f.Rotation.MinFreeDisk),
		Compression:   r.Compression,
		FrameSize:     int(r.FrameTargetSize),
		Policy:        dump.Policy(r.Coalesce),
		MaxPerMinute:  r.MaxDumpsPerMinute,
		StopTimeout:   r.StopDeadline.D(),
	}
	if r.Reorder {
		dc.ReorderWindow = r.ReorderWindow.D()
		if dc.ReorderWindow <= 0 {
			return ec, dc, fmt.Errorf("recorder.reorder_window must be > 0 when reorder = true")
		}
	}
	if r.Guard == 0 {
		ec.Guard = -1 // an explicit 0 in the file means no guard
	}
	for _, t := range f.Topics {
		ec.Topics = append(ec.Topics, engine.TopicOverride{Match: t.Match, Pre: t.Pre.D(), Post: t.Post.D(),
			MaxPacket: int(t.MaxPacket), MaxBytes: int64(t.MaxBytes), OnlyFront: t.OnlyFront, OnlyBack: t.OnlyBack,
			KeepLast: t.KeepLast})
	}
	switch r.Format {
	case "pack", "":
	case "mcap":
		dc.Extension = dump.MCAPExt
		dc.NewWriter = dump.NewMCAPWriter
	default:
		return ec, dc, fmt.Errorf("recorder.format = %q: want pack or mcap", r.Format)
	}
	return ec, dc, nil
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
	opts := scripts.Options{Params: rc.Params, OnTrigger: d.ruleTriggered, Logger: d.log}
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
	if err := d.dumper.Start(); err != nil {
		return err
	}
	for _, c := range d.shms {
		if err := c.Start(); err != nil {
			return err
		}
	}
	for _, u := range d.udps {
		d.run(u.Run)
	}
	for _, r := range d.raws {
		d.run(r.Run)
	}
	if len(d.rules) > 0 {
		live, err := scripts.StartLive(d.rec, d.rules, scripts.LiveOptions{})
		if err != nil {
			return err
		}
		d.liveMu.Lock()
		d.live = live
		d.liveMu.Unlock()
	}
	if d.httpSrv != nil {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := d.httpSrv.Serve(d.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http server stopped", "err", err)
			}
		}()
	}
	for _, t := range d.dumper.Status().LeftoverTmp {
		d.log.Warn("leftover incomplete dump from an earlier run; salvage with edr-lite recover", "file", t)
	}
	d.log.Info("recording", "dump_dir", d.cfg.Recorder.DumpDir, "cache", d.cfg.Recorder.CacheSize,
		"shm_sources", len(d.shms), "udp_sources", len(d.udps), "raw_sources", len(d.raws), "rules", len(d.rules))
	return nil
}

func (d *Daemon) run(f func(context.Context) error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := f(d.ctx); err != nil && d.ctx.Err() == nil {
			d.log.Error("source stopped", "err", err)
		}
	}()
}

// HTTPAddr returns the HTTP listener's address, or "" when off.
func (d *Daemon) HTTPAddr() string {
	if d.httpLn == nil {
		return ""
	}
	return d.httpLn.Addr().String()
}

// ruleTriggered hands a rule's trigger to the recorder (on the rule's
// goroutine; Trigger returns at once).
func (d *Daemon) ruleTriggered(t scripts.Trigger) {
	id, err := d.dumper.Trigger(dump.TriggerParams{Reason: t.Reason, Source: dumpinfo.SourceLua, Rule: t.Rule, TimeNs: t.TimeNs,
		Pre: t.Pre, Post: t.Post, Topics: t.Topics, Tag: t.Tag, Severity: t.Severity, Params: t.Params})
	if err != nil {
		d.log.Warn("rule trigger not accepted", "rule", t.Rule, "reason", t.Reason, "err", err)
		return
	}
	d.log.Info("trigger", "id", id, "rule", t.Rule, "reason", t.Reason, "time", time.Unix(0, t.TimeNs).UTC())
}

// Trigger asks for a dump; with wait it blocks until the dump is finalized.
func (d *Daemon) Trigger(ctx context.Context, p dump.TriggerParams, wait bool) (dump.TriggerID, dump.Result, error) {
	id, err := d.dumper.Trigger(p)
	if err != nil || !wait {
		return id, dump.Result{}, err
	}
	res, err := d.dumper.Wait(ctx, id)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return id, res, err
}

// dumpFinished runs on the recorder's hook goroutine for every dump.
func (d *Daemon) dumpFinished(res dump.Result) {
	if res.Err != nil {
		d.log.Error("dump failed", "reasons", res.Reasons, "err", res.Err)
	} else {
		d.log.Info("dump written", "path", res.Path, "bytes", res.Bytes, "messages", res.Messages, "lost", res.Lost, "reasons", res.Reasons)
	}
	d.liveMu.Lock()
	live := d.live
	d.liveMu.Unlock()
	if live != nil {
		live.DumpFinished(scripts.DumpResult{Path: res.Path, Reason: strings.Join(res.Reasons, ","), Bytes: res.Bytes,
			Messages: int64(res.Messages), Err: res.Err})
	}
	if d.opts.OnDump != nil {
		d.opts.OnDump(res)
	}
	if res.Err == nil && len(d.cfg.Hooks.Exec) > 0 {
		d.execHook(res)
	}
}

// execHook runs the configured command with the dump path appended.
func (d *Daemon) execHook(res dump.Result) {
	timeout := d.cfg.Hooks.Timeout.D()
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	args := append(append([]string(nil), d.cfg.Hooks.Exec[1:]...), res.Path)
	cmd := exec.CommandContext(ctx, d.cfg.Hooks.Exec[0], args...)
	cmd.Env = append(os.Environ(), "EDR_DUMP_PATH="+res.Path, "EDR_DUMP_REASONS="+strings.Join(res.Reasons, ","),
		"EDR_DUMP_BYTES="+strconv.FormatInt(res.Bytes, 10))
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.log.Error("dump hook failed", "cmd", d.cfg.Hooks.Exec, "path", res.Path, "err", err, "output", strings.TrimSpace(string(out)))
		return
	}
	d.log.Info("dump hook done", "cmd", d.cfg.Hooks.Exec[0], "path", res.Path)
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
			errs = append(errs, fmt.Errorf("%s: %w", r.Name(), err))
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
	if live != nil {
		live.Close()
	}
	d.cancel()
	d.closeSources()
	if d.dumper != nil {
		d.dumper.Stop()
	}
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
}

// release closes listeners and the recorder (also used to roll back New).
func (d *Daemon) release() {
	d.cancel()
	if d.ctl != nil {
		d.ctl.Close()
	}
	if d.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d.httpSrv.Shutdown(ctx)
		cancel()
	} else if d.httpLn != nil {
		d.httpLn.Close()
	}
	if d.live == nil {
		for _, r := range d.rules {
			r.Close()
		}
	}
	d.closeSources()
	if d.dumper != nil {
		d.dumper.Stop()
	}
	if d.rec != nil {
		d.rec.Close()
	}
}

// handle serves one control-socket request.
func (d *Daemon) handle(ctx context.Context, req *control.Request) *control.Response {
	switch req.Op {
	case "trigger":
		p := dump.TriggerParams{Reason: req.Reason, Source: dumpinfo.SourceCommand, Topics: req.Topics, Tag: req.Tag}
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
			ctx, cancel = context.WithTimeout(ctx, t)
			defer cancel()
		}
		id, res, err := d.Trigger(ctx, p, !req.NoWait)
		if err != nil {
			return &control.Response{ID: uint64(id), Error: err.Error()}
		}
		return &control.Response{OK: true, ID: uint64(id), Path: res.Path, Bytes: res.Bytes}
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

func optDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	v, err := units.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: bad duration %q", field, s)
	}
	return v, nil
}

// mux for HTTP: /metrics, /status, /debug/pprof, and the report pages
// (/, /dumps/; report.go).
func (d *Daemon) httpHandler() http.Handler {
	mux := http.NewServeMux()
	d.reportRoutes(mux)
	mux.Handle("/metrics", d.metricsHandler())
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(d.Status())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
