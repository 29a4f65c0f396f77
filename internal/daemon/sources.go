package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/shm"
)

// Why a source is not receiving (SourceStat.Cause, the cause label of
// edr_source_receiving).
const (
	// CauseStopped: the source's receive loop ended with an error.
	CauseStopped = "stopped"
	// CauseDirMissing: a shared-memory source's directory is gone.
	CauseDirMissing = "dir_missing"
	// CauseNoSegment: no producer's segment is followed in the directory.
	CauseNoSegment = "no_segment"
	// CauseRefused: segments or datagrams arrive but none is recorded.
	CauseRefused = "refused"
	// CauseNoData: nothing arrived since the recorder started.
	CauseNoData = "no_data"
)

// SourceSilentAfter is how long after start a source may receive nothing
// before run logs it (then again each time it stops or starts receiving);
// status and /metrics say it at once.
var SourceSilentAfter = 10 * time.Second

// sourceCheckEvery is how often run looks at the sources for that log.
var sourceCheckEvery = 2 * time.Second

// shmHealth says whether a shared-memory source receives: at least one
// producer's segment followed and not quarantined.
func shmHealth(dir string, st shm.ConsumerStats) (ok bool, cause, why string) {
	if st.Segments > st.Quarantined {
		return true, "", ""
	}
	if _, err := os.Stat(dir); err != nil {
		return false, CauseDirMissing, fmt.Sprintf("the segment directory %s is gone: %v", dir, err)
	}
	if st.Segments > 0 {
		return false, CauseRefused, fmt.Sprintf("every segment in %s is quarantined (status lists why per topic)", dir)
	}
	if n := len(st.Errors); n > 0 {
		return false, CauseRefused, fmt.Sprintf("no segment in %s is followed; the last one refused: %v", dir, st.Errors[n-1])
	}
	w := "no producer's segment in " + dir + " (producers must write their segments into this directory)"
	if d := shmDirWarning(dir); d != "" {
		w += "; " + d
	}
	return false, CauseNoSegment, w
}

// captureHealth says whether a UDP or raw source receives: its loop runs
// and it recorded a message since start.
func captureHealth(what string, st capture.Stats, stopped error) (ok bool, cause, why string) {
	switch {
	case stopped != nil:
		return false, CauseStopped, "stopped: " + stopped.Error()
	case st.Ingested > 0:
		return true, "", ""
	case st.Packets > 0:
		return false, CauseRefused, fmt.Sprintf("%d packets arrived, none recorded (malformed %d, truncated %d, unmapped %d, rejected %d)",
			st.Packets, st.Malformed, st.Truncated, st.Unmapped, st.Rejected)
	}
	return false, CauseNoData, "nothing received " + what + " since the recorder started"
}

// runSource runs a network source's receive loop; an error that ends it
// is logged and kept for status.
func (d *Daemon) runSource(key string, f func(context.Context) error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := f(d.ctx); err != nil && d.ctx.Err() == nil {
			d.srcMu.Lock()
			d.srcStopped[key] = err
			d.srcMu.Unlock()
			d.log.Error("source stopped: it records nothing until the recorder restarts", "source", key, "err", err)
		}
	}()
}

// stoppedErr is the error that ended the source at key, nil while it runs.
func (d *Daemon) stoppedErr(key string) error {
	d.srcMu.Lock()
	defer d.srcMu.Unlock()
	return d.srcStopped[key]
}

// watchSources logs, from SourceSilentAfter on, each source that is not
// receiving (once, with the reason) and each that starts receiving again.
func (d *Daemon) watchSources() {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(sourceCheckEvery)
		defer t.Stop()
		silent := map[string]bool{}
		for {
			select {
			case <-d.ctx.Done():
				return
			case <-t.C:
			}
			if time.Since(d.started) < SourceSilentAfter {
				continue
			}
			for _, s := range d.sourceStats() {
				switch {
				case !s.Receiving && !silent[s.Key]:
					silent[s.Key] = true
					d.log.Warn("source receiving nothing", "source", s.Key, "name", s.Name, "cause", s.Cause, "why", s.Why)
				case s.Receiving && silent[s.Key]:
					delete(silent, s.Key)
					d.log.Info("source receiving", "source", s.Key, "name", s.Name)
				}
			}
		}
	}()
}

// sourceStats is every source's figures and whether it receives.
func (d *Daemon) sourceStats() []SourceStat {
	out := []SourceStat{}
	for i, c := range d.shms {
		s := c.Stats()
		dir := d.cfg.Sources.SHM[i].Dir
		st := SourceStat{Kind: "shm", Key: fmt.Sprintf("source.shm[%d]", i), Name: dir, Messages: s.Messages,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: uint64(len(s.Errors)),
			LeftoverSegments: uint64(s.Leftovers), LeftoverMessages: s.LeftoverMessages, RefusedSegments: uint64(s.Refused)}
		st.Receiving, st.Cause, st.Why = shmHealth(dir, s)
		out = append(out, st)
	}
	for i, u := range d.udps {
		s := u.Stats()
		key := fmt.Sprintf("source.udp[%d]", i)
		st := SourceStat{Kind: "udp", Key: key, Name: d.cfg.Sources.UDP[i].Listen, Messages: s.Ingested,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: s.Malformed + s.Truncated + s.Unmapped}
		st.Receiving, st.Cause, st.Why = captureHealth("on "+u.LocalAddr().String(), s, d.stoppedErr(key))
		out = append(out, st)
	}
	for i, r := range d.raws {
		s := r.Stats()
		key := fmt.Sprintf("source.raw[%d]", i)
		st := SourceStat{Kind: "raw", Key: key, Name: d.cfg.Sources.Raw[i].Interface, Messages: s.Ingested,
			Bytes: s.Bytes, Lost: s.Lost, Rejected: s.Rejected, Errors: s.Malformed + s.Truncated + s.Unmapped}
		st.Receiving, st.Cause, st.Why = captureHealth("on "+d.cfg.Sources.Raw[i].Interface+" that the filter passes", s, d.stoppedErr(key))
		out = append(out, st)
	}
	return append(out, d.canSourceStats()...)
}
