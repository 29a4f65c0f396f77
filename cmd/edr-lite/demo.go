//go:build !ecu

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/keyfile"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/daemon"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

func init() {
	register(&verb{name: "demo", summary: "record a simulated vehicle's hard brake, end to end, with no configuration", run: runDemo})
}

func runDemo(e *env) int {
	c := newCommand(e, "demo", "edr-lite demo [--dir DIR] [--duration D] [--live [--live-addr HOST:PORT]] [--can] [--sign-key KEY]",
		`Run the recorder's main job on an embedded default: a simulated vehicle
publishes typed topics over real shared-memory segments (speed 100 Hz, brake
pedal 50 Hz and IMU 200 Hz as packed structs, a camera at 30 Hz as
foxglove.CompressedImage JPEG frames, a latched JSON calibration), the
recorder keeps every topic in its rings and runs the shipped hard_brake.lua
rule; the vehicle brakes hard 3 s in, the rule fires, and the window from 3 s
before to 2 s after is written to a dump. The demo prints the dump's path and
its summary, then exits 0. "cat --decode" shows the signals; an MCAP export
opens in Foxglove with plottable fields and the camera.

With --live the recorder also serves its topics to Foxglove while it records
(the live server, docs/live.md): the demo prints the URL to open, drives for
60s unless --duration says otherwise, each subscription starts with 10s of
history, and a message published on operator/mark (Foxglove's Publish panel)
triggers a dump.

--can adds the vehicle's CAN bus: frames of a shipped DBC (wheel speeds,
brake pressure, gear, steering) written as a candump log into a FIFO that a
[[source.can]] candump source reads with that DBC, so the dump also holds
can/can0 (the frames) and one topic per DBC message (can/can0/WheelSpeeds,
...), and a second hard_brake rule reads the DBC signal WheelFL (docs/can.md).

With --sign-key the dump is signed with that Ed25519 private key and
chained in DIR, as a recorder with evidence.sign_key does
(docs/evidence.md); "edr-lite verify --key PUB" checks it.`,
		"edr-lite demo\nedr-lite demo --dir /tmp/edr --duration 10s\nedr-lite demo --live\nedr-lite demo --can\nedr-lite info --json /tmp/edr/*.pack", 0, 0)
	dir := c.fs.String("dir", daemon.DemoDefaultDir(), "directory for the dump")
	dur := c.fs.Duration("duration", 7*time.Second, "how long the vehicle drives (the brake is at 3s)")
	verbose := c.fs.Bool("v", false, "print the recorder's logs")
	liveOn := c.fs.Bool("live", false, "serve the topics to Foxglove while recording (prints the URL; 60s drive unless --duration)")
	liveAddr := c.fs.String("live-addr", defaults.LiveAddr, "with --live: the address to listen on (a port of 0 picks a free one)")
	withCAN := c.fs.Bool("can", false, "also drive a CAN bus (a candump FIFO decoded by a shipped DBC) and a rule on its signal")
	signKey := c.fs.String("sign-key", "", "sign and chain the dump with this Ed25519 private key `FILE` (PEM, as \"openssl genpkey -algorithm ed25519\" writes it)")
	c.withLogFlags()
	_, code, ok := c.parse()
	if !ok {
		return code
	}
	durSet, addrSet := false, false
	c.fs.Visit(func(f *flag.Flag) {
		durSet = durSet || f.Name == "duration"
		addrSet = addrSet || f.Name == "live-addr"
	})
	if addrSet && !*liveOn {
		return c.usageErr("--live-addr %s without --live: add --live to serve the topics", *liveAddr)
	}
	if *liveOn && !durSet {
		*dur = 60 * time.Second
	}
	if *dur < 4*time.Second {
		return c.usageErr("--duration %s: the brake happens 3s in; give it at least 4s", *dur)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := daemon.DemoOptions{Dir: *dir, Duration: *dur, CAN: *withCAN}
	demoKeys := &evidence.Keyring{}
	if *signKey != "" {
		s, err := keyfile.LoadSigner(*signKey)
		if err != nil {
			return c.fail(err)
		}
		demoKeys.Add(s.Public())
		opts.Config = func(f *config.File) { f.Evidence.SignKey = *signKey }
	}
	if *liveOn {
		opts.Live = *liveAddr
		opts.OnLive = func(url string) {
			fmt.Fprintf(e.stdout, "live: %s  (in Foxglove: Open connection > Foxglove WebSocket > this URL, or open https://app.foxglove.dev/~/view?ds=foxglove-websocket&ds.url=%s)\n", url, url)
		}
	}
	if *verbose {
		opts.Logger = c.logger()
	}
	fmt.Fprintf(e.stderr, "demo: driving for %s (hard brake at 3s), recording into %s ...\n", *dur, *dir)
	stopBar := driveProgress(e, *dur)
	res, err := daemon.RunDemo(ctx, opts)
	stopBar()
	if res != nil {
		for _, r := range res.Status.Rules {
			if r.Disabled {
				fmt.Fprintf(e.stderr, "demo: rule %s disabled: %s\n", r.Name, r.Why)
			}
		}
	}
	if err != nil {
		return c.fail(err)
	}
	for _, r := range res.Dumps {
		fmt.Fprintf(e.stdout, "dump: %s\n\n", r.Path)
		in, err := dumpfile.ReadInfo(r.Path)
		if err != nil {
			return c.fail(err)
		}
		v, err := dumpfile.CheckSeal(r.Path, demoKeys)
		if err != nil {
			return c.fail(err)
		}
		printInfo(e.stdout, in, nil, &v, nil)
	}
	p := res.Dumps[0].Path
	fmt.Fprintf(e.stdout, "\nNext: edr-lite cat %s --decode --topics vehicle/speed --limit 5   |   edr-lite export --format mcap %s -o demo.mcap  (open it in Foxglove)\n", p, p)
	return exitOK
}

// driveProgress draws, on a terminal, a bar of the seconds driven so far
// (the demo drives in real time) until the returned func is called; that
// draws it at 100% on a line of its own.
func driveProgress(e *env, dur time.Duration) (stop func()) {
	bar := newProgress(e, int64(dur/time.Second), "driving", "s")
	if bar.bar == nil {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				bar.finish()
				return
			case <-t.C:
				bar.set(int64(time.Since(start) / time.Second))
			}
		}
	}()
	return func() { close(done); <-finished }
}
