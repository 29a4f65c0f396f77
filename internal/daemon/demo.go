//go:build !ecu

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/demo"
	"github.com/edr-lite/edr-lite/shm"
)

// DemoOptions configure a demo run.
type DemoOptions struct {
	// Dir receives the dump (created if missing).
	Dir string
	// SHMDir holds the shared-memory segments (created, and removed at the
	// end); "" means a fresh directory under /dev/shm (or the temp dir).
	SHMDir string
	// Duration is how long the vehicle drives; the demo also waits for the
	// dump to be finalized.
	Duration time.Duration
	// Vehicle is the scenario (DefaultVehicle when zero).
	Vehicle demo.Vehicle
	// Logger receives the recorder's logs (nil: discarded).
	Logger *slog.Logger
	// Config, when not nil, adjusts the demo configuration before use.
	Config func(*config.File)
	// Live, when not "", serves the topics live on this address (the
	// live server, docs/live.md: DemoLiveHistory of history, clients may
	// publish on operator/*, and operator/mark triggers a dump); OnLive
	// is then called with the URL to open in Foxglove once it listens.
	Live   string
	OnLive func(url string)
	// CAN adds the vehicle's CAN bus and a rule on its DBC signal
	// (demo_can.go).
	CAN bool
}

// DemoLiveHistory is the history each subscription of "demo --live" gets,
// and DemoMarkTopic the topic whose messages trigger a dump there.
const (
	DemoLiveHistory = 10 * time.Second
	DemoMarkTopic   = "operator/mark"
)

// DemoResult is what a demo run produced.
type DemoResult struct {
	Dumps  []dump.Result
	Status Status
}

// DemoPre and DemoPost are the demo's windows around the hard brake.
const (
	DemoPre  = 3 * time.Second
	DemoPost = 2 * time.Second
)

// DemoConfig returns the demo's recorder configuration: one shm source, the
// shipped hard_brake rule, windows of DemoPre and DemoPost, a large ring for the
// camera and the calibration pinned with keep_last.
func DemoConfig(dumpDir, shmDir string) *config.File {
	f, err := config.Parse("demo", []byte(config.Default()))
	if err != nil {
		panic("BUG: default configuration does not parse: " + err.Error())
	}
	r := &f.Recorder
	r.DumpDir = dumpDir
	r.CacheSize = 160 << 20
	r.Pre = config.Duration(DemoPre)
	r.Post = config.Duration(DemoPost)
	r.Guard = config.Duration(250 * time.Millisecond)
	f.Rotation.MinFreeDisk = 16 << 20
	f.Topics = []config.Topic{
		{Match: demo.TopicCamera, MaxBytes: new(config.Size(64 << 20)), MaxPacket: new(config.Size(1 << 20))},
		{Match: demo.TopicCalibration, KeepLast: 1},
	}
	f.Sources.SHM = []config.SHMSource{{Dir: shmDir}}
	// the rule sets no window: its dumps use the recorder's pre and post
	f.Rules = []config.Rule{{Name: "hard_brake", Params: map[string]string{"topic": demo.TopicSpeed, "decel": "6"}}}
	f.Control.Socket = ""
	f.Control.HTTP = ""
	return f
}

// RunDemo drives the simulated vehicle over real shared-memory segments into a
// recorder running the hard_brake rule, and returns once the vehicle has
// driven for Duration and the dump it caused is finalized (or ctx ends).
func RunDemo(ctx context.Context, o DemoOptions) (*DemoResult, error) {
	o.setDefaults()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if o.SHMDir == "" {
		d, err := makeDemoSHMDir()
		if err != nil {
			return nil, err
		}
		o.SHMDir = d
		defer os.RemoveAll(d)
	}
	var fifo, dbc string
	if o.CAN {
		var err error
		if fifo, dbc, err = demoCANFiles(o.SHMDir); err != nil {
			return nil, err
		}
		prev := o.Config
		o.Config = func(f *config.File) {
			addDemoCAN(f, fifo, dbc)
			if prev != nil {
				prev(f)
			}
		}
	}
	d, dumps, err := startDemoRecorder(&o)
	if err != nil {
		return nil, err
	}
	prods, pubs, err := openDemoProducers(o.SHMDir)
	if err != nil {
		d.Stop()
		return nil, err
	}
	if o.CAN {
		fh, p, err := openDemoCAN(fifo)
		if err != nil {
			closeProducers(prods)
			d.Stop()
			return nil, err
		}
		defer fh.Close()
		pubs[demo.TopicCAN] = p
	}
	dr := startDriving(ctx, o.Vehicle, o.Duration, prods, pubs)
	res := &DemoResult{}
	awaitDump(ctx, d, dumps, o.Duration, res)
	vehErr := dr.halt()
	res.Status = d.Status()
	closeProducers(prods)
	d.Stop()
	takeQueued(dumps, res) // a dump finalized while stopping still counts
	return res, demoOutcome(ctx, res, vehErr)
}

// takeQueued appends the dumps still queued on dumps to res.Dumps.
func takeQueued(dumps <-chan dump.Result, res *DemoResult) {
	for {
		select {
		case r := <-dumps:
			res.Dumps = append(res.Dumps, r)
			continue
		default:
		}
		break
	}
}

// setDefaults fills in the zero Duration (7s), Vehicle (DefaultVehicle) and
// Logger (discarding).
func (o *DemoOptions) setDefaults() {
	if o.Duration <= 0 {
		o.Duration = 7 * time.Second
	}
	if o.Vehicle == (demo.Vehicle{}) {
		o.Vehicle = demo.DefaultVehicle()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// makeDemoSHMDir creates a fresh directory for the segments under /dev/shm,
// or under the temp dir when there is no /dev/shm.
func makeDemoSHMDir() (string, error) {
	base := "/dev/shm"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		base = os.TempDir()
	}
	return os.MkdirTemp(base, "edr-lite-demo-")
}

// startDemoRecorder starts a recorder with the demo configuration (adjusted
// by o.Config); every dump it finalizes is sent on dumps (dropped when the
// channel is full).
func startDemoRecorder(o *DemoOptions) (*Daemon, <-chan dump.Result, error) {
	cfg := DemoConfig(o.Dir, o.SHMDir)
	if o.Live != "" {
		cfg.Live.Listen, cfg.Live.History = o.Live, config.Duration(DemoLiveHistory)
		cfg.Live.ClientPublish, cfg.Live.TriggerTopics = true, []string{DemoMarkTopic}
	}
	if o.Config != nil {
		o.Config(cfg)
	}
	dumps := make(chan dump.Result, 4)
	d, err := New(Options{Config: cfg, Logger: o.Logger, Version: "edr-lite demo",
		OnDump: func(r dump.Result) {
			select {
			case dumps <- r:
			default:
			}
		}})
	if err != nil {
		return nil, nil, err
	}
	if err := d.Start(); err != nil {
		d.Stop()
		return nil, nil, err
	}
	if a := d.LiveAddr(); a != "" && o.OnLive != nil {
		o.OnLive("ws://" + a + "/")
	}
	return d, dumps, nil
}

// openDemoProducers creates one segment in dir per demo topic (16 MiB rings
// for topics of large messages, 1 MiB for the others) and returns their
// producers, also by topic name. On failure it closes those it opened.
func openDemoProducers(dir string) ([]*shm.Producer, map[string]demo.Publisher, error) {
	pubs := map[string]demo.Publisher{}
	var prods []*shm.Producer
	for _, tp := range demo.Topics {
		capacity := 1 << 20
		if tp.Size > 64<<10 {
			capacity = 16 << 20
		}
		p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: tp.Name, Type: tp.Type, Capacity: capacity,
			HeartbeatPeriod: 500 * time.Millisecond})
		if err != nil {
			closeProducers(prods)
			return nil, nil, fmt.Errorf("demo: producer %s: %w", tp.Name, err)
		}
		prods = append(prods, p)
		pubs[tp.Name] = p
	}
	return prods, pubs, nil
}

// closeProducers closes every producer of prods.
func closeProducers(prods []*shm.Producer) {
	for _, p := range prods {
		p.Close()
	}
}

// driving is the simulated vehicle on the road: its goroutine and the one
// sending its producers' heartbeats.
type driving struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error // the vehicle's, once wg is done
}

// startDriving starts v publishing to pubs for duration (until ctx ends or
// halt), and heartbeats of prods every 200 ms meanwhile.
func startDriving(ctx context.Context, v demo.Vehicle, duration time.Duration, prods []*shm.Producer, pubs map[string]demo.Publisher) *driving {
	vctx, cancel := context.WithCancel(ctx)
	dr := &driving{cancel: cancel}
	dr.wg.Add(2)
	go func() {
		defer dr.wg.Done()
		dr.err = v.Run(vctx, duration, pubs)
	}()
	go func() { // heartbeats while driving
		defer dr.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-vctx.Done():
				return
			case <-t.C:
				for _, p := range prods {
					p.Heartbeat()
				}
			}
		}
	}()
	return dr
}

// halt stops the vehicle and the heartbeats, waits for them and returns
// the vehicle's error.
func (dr *driving) halt() error {
	dr.cancel()
	dr.wg.Wait()
	return dr.err
}

// awaitDump collects the dumps d reports into res.Dumps until the vehicle
// has driven for duration and a dump has been finalized with none pending
// or being written, or until duration+30s have passed or ctx ends.
func awaitDump(ctx context.Context, d *Daemon, dumps <-chan dump.Result, duration time.Duration, res *DemoResult) {
	drove := time.After(duration)
	deadline := time.After(duration + 30*time.Second)
	done := false
	for !done {
		select {
		case r := <-dumps:
			res.Dumps = append(res.Dumps, r)
		case <-drove:
			drove = nil
		case <-deadline:
			done = true
		case <-ctx.Done():
			done = true
		}
		if drove == nil && len(res.Dumps) > 0 && d.Status().Dumps.Pending == 0 && !d.Status().Dumps.Dumping {
			done = true
		}
	}
}

// demoOutcome is the error of a demo run: the vehicle's, ctx's, no dump
// at all, or a dump that failed; nil when the demo did what it shows.
func demoOutcome(ctx context.Context, res *DemoResult, vehErr error) error {
	if vehErr != nil && !errors.Is(vehErr, context.Canceled) {
		return vehErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(res.Dumps) == 0 {
		return errors.New("demo: the hard brake caused no dump (see the rule status above)")
	}
	for _, r := range res.Dumps {
		if r.Err != nil {
			return fmt.Errorf("demo: dump failed: %w", r.Err)
		}
	}
	return nil
}

// DemoDefaultDir is where "edr-lite demo" writes when --dir is not given.
func DemoDefaultDir() string { return filepath.Join(os.TempDir(), "edr-lite-demo") }
