//go:build !ecu

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/media"
)

// Camera files (package media) are in the full build only: the ECU
// build's importCamera and warnSkippedIn are in build_ecu.go.

// importCamera imports a JPEG folder or an MP4 file: the camera Source
// (dumpfile.OpenMedia) rewritten to a pack or MCAP file.
func importCamera(c *command, format, in, out, comp, topic, frameID, timeSrc, start string, fps float64, tz string, strict bool) int {
	opts := dumpfile.MediaOptions{Topic: topic, FrameID: frameID}
	var startNs int64
	mtime := start == "mtime"
	if mtime && format != dumpfile.FormatMP4 {
		return c.usageErr("--start mtime is for --format mp4")
	}
	if start != "" && !mtime {
		t, err := filter.ParseTime(start)
		if err != nil || t.Offset() {
			return c.usageErr("--start %q: want nanoseconds since the epoch or RFC 3339 (2026-12-02T10:15:00.5Z)", start)
		}
		startNs = t.At(0)
	}
	switch format {
	case dumpfile.FormatJPEGDir:
		for _, s := range strings.Split(timeSrc, ",") {
			ts, err := media.ParseTimeSource(strings.TrimSpace(s))
			if err != nil {
				return c.usageErr("--time %q: want name, exif or rate, in the order to try them", timeSrc)
			}
			opts.JPEG.Sources = append(opts.JPEG.Sources, ts)
		}
		if slices.Contains(opts.JPEG.Sources, media.TimeFromRate) {
			if fps <= 0 || math.IsInf(fps, 0) || math.IsNaN(fps) {
				return c.usageErr("--time rate needs --fps F (> 0)")
			}
			if start == "" {
				return c.usageErr("--time rate needs --start T")
			}
			opts.JPEG.StartNs, opts.JPEG.FrameIntervalNs = startNs, int64(math.Round(1e9/fps))
			if opts.JPEG.FrameIntervalNs <= 0 {
				return c.usageErr("--fps %g: over 1e9 frames per second", fps)
			}
		} else if c.set("fps") || c.set("start") {
			return c.usageErr("--fps and --start are for --time rate")
		}
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return c.usageErr("--tz %q: %v", tz, err)
		}
		opts.JPEG.Location = loc
	case dumpfile.FormatMP4:
		for _, fl := range []string{"time", "fps", "tz"} {
			if c.set(fl) {
				return c.usageErr("--%s is for --format jpeg-dir", fl)
			}
		}
		opts.StartNs, opts.HasStart, opts.StartMtime = startNs, start != "" && !mtime, mtime
	}
	outFormat := dumpfile.FormatPack
	if strings.EqualFold(filepath.Ext(out), ".mcap") {
		outFormat = dumpfile.FormatMCAP
	}
	if _, err := os.Stat(out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", out))
	}
	src, err := dumpfile.OpenMedia(in, format, opts)
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	c.warnSkipped(src)
	facts := src.Media()
	if strict && len(facts.Damaged) > 0 {
		return c.fail(fmt.Errorf("--strict: %s is damaged (%s): nothing written", in, facts.Lost()))
	}
	if mtime {
		fmt.Fprintf(c.e.stderr, "edr-lite import: %s: --start mtime: the movie starts at %s (its last frame ends at the file's modification time)\n",
			in, fmtTime(facts.StartNs))
	}
	rep, err := dumpfile.Rewrite([]*dumpfile.Source{src}, dumpfile.Output{Path: out},
		dumpfile.RewriteOptions{Format: outFormat, Compression: comp, Writer: "edr-lite import"})
	if err != nil {
		return c.fail(err)
	}
	c.warnNotes(rep.Notes)
	t := src.Topics()[0]
	fmt.Fprintf(c.e.stdout, "%s: %s (%s), %d messages, %s of data, %s written", out, t.String(), t.Type.Schema.Name,
		rep.Messages, units.FormatSize(int64(rep.Bytes)), units.FormatSize(rep.Parts[0].Size))
	if facts.Reordered {
		fmt.Fprintf(c.e.stdout, "; B-frames (Foxglove cannot play them)")
	}
	if lost := facts.Lost(); lost != "" {
		fmt.Fprintf(c.e.stdout, "; %s", lost)
	}
	fmt.Fprintln(c.e.stdout)
	return exitOK
}

// warnSkippedIn prints what the camera inputs among paths leave out or
// hold damaged (for verbs whose library opens the inputs: replay, rules
// test, cat, report).
func (c *command) warnSkippedIn(paths []string) {
	for _, p := range paths {
		if f, err := dumpfile.Detect(p); err == nil && (f == dumpfile.FormatJPEGDir || f == dumpfile.FormatMP4) {
			if s, err := dumpfile.OpenMedia(p, f, dumpfile.MediaOptions{}); err == nil {
				c.warnSkipped(s)
				s.Close()
			}
		}
	}
}
