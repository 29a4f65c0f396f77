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
}

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
		{Match: demo.TopicCamera, MaxBytes: 64 << 20, MaxPacket: 1 << 20},
		{Match: demo.TopicCalibration, KeepLast: 1},
	}
	f.Sources.SHM = []config.SHMSource{{Dir: shmDir}}
	f.Rules = []config.Rule{{Name: "hard_brake", Params: map[string]string{
		"topic": demo.TopicSpeed, "pre": DemoPre.String(), "post": DemoPost.String(), "decel": "6"}}}
	f.Control.Socket = ""
	f.Control.HTTP = ""
	return f
}

// RunDemo drives the simulated vehicle over real shared-memory segments into a
// recorder running the hard_brake rule, and returns once the vehicle has
// driven for Duration and the dump it caused is finalized (or ctx ends).
func RunDemo(ctx context.Context, o DemoOptions) (*DemoResult, error) {
	if o.Duration <= 0 {
		o.Duration = 7 * time.Second
	}
	if o.Vehicle == (demo.Vehicle{}) {
		o.Vehicle = demo.DefaultVehicle()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if o.SHMDir == "" {
		base := "/dev/shm"
		if st, err := os.Stat(base); err != nil || !st.IsDir() {
			base = os.TempDir()
		}
		d, err := os.MkdirTemp(base, "edr-lite-demo-")
		if err != nil {
			return nil, err
		}
		o.SHMDir = d
		defer os.RemoveAll(d)
	}
	cfg := DemoConfig(o.Dir, o.SHMDir)
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
		return nil, err
	}
	if err := d.Start(); err != nil {
		d.Stop()
		return nil, err
	}
	pubs := map[string]demo.Publisher{}
	var prods []*shm.Producer
	closeAll := func() {
		for _, p := range prods {
			p.Close()
		}
	}
	for _, tp := range demo.Topics {
		capacity := 1 << 20
		if tp.Size > 64<<10 {
			capacity = 16 << 20
		}
		p, err := shm.NewProducer(o.SHMDir, shm.ProducerOptions{Name: tp.Name, Type: tp.Type, Capacity: capacity,
			HeartbeatPeriod: 500 * time.Millisecond})
		if err != nil {
			closeAll()
			d.Stop()
			return nil, fmt.Errorf("demo: producer %s: %w", tp.Name, err)
		}
		prods = append(prods, p)
		pubs[tp.Name] = p
	}
	vctx, stopVehicle := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var vehErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		vehErr = o.Vehicle.Run(vctx, o.Duration, pubs)
	}()
	go func() { // heartbeats while driving
		defer wg.Done()
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
	res := &DemoResult{}
	drove := time.After(o.Duration)
	deadline := time.After(o.Duration + 30*time.Second)
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
	stopVehicle()
	wg.Wait()
	res.Status = d.Status()
	closeAll()
	d.Stop()
	// a dump finalized while stopping still counts
	for {
		select {
		case r := <-dumps:
			res.Dumps = append(res.Dumps, r)
			continue
		default:
		}
		break
	}
	if vehErr != nil && !errors.Is(vehErr, context.Canceled) {
		return res, vehErr
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if len(res.Dumps) == 0 {
		return res, errors.New("demo: the hard brake caused no dump (see the rule status above)")
	}
	for _, r := range res.Dumps {
		if r.Err != nil {
			return res, fmt.Errorf("demo: dump failed: %w", r.Err)
		}
	}
	return res, nil
}

// DemoDefaultDir is where "edr-lite demo" writes when --dir is not given.
func DemoDefaultDir() string { return filepath.Join(os.TempDir(), "edr-lite-demo") }
