package engine

import "github.com/edr-lite/edr-lite/arena"

// Status is a recorder-wide snapshot.
type Status struct {
	Arena  arena.Usage
	Topics []TopicStatus
	// Dumps: written, failed (any cause), refused for low disk; triggers
	// merged into a waiting dump, rejected by the rate limit; results the
	// hooks never saw because their queue was full; old dumps deleted by
	// rotation.
	DumpsWritten, DumpsFailed, DumpsRefusedDisk uint64
	TriggersCoalesced, TriggersRateLimited      uint64
	HookResultsDropped, DumpsRotated            uint64
	// Pending is the number of dumps waiting for their post window.
	Pending int
	// Dumping reports a dump being written now.
	Dumping bool
	// LastError is the last dump failure ("" when none).
	LastError string
	// LeftoverTmp lists .tmp files found in the dump directory at start:
	// dumps interrupted by a crash (pack can recover them).
	LeftoverTmp []string
	// UnknownIngests counts Ingest calls for ids never handed out.
	UnknownIngests uint64
}

// Status returns a snapshot of the recorder.
func (r *Recorder) Status() Status {
	d := r.d
	s := Status{
		Arena:               r.arena.Usage(),
		Topics:              r.Topics(),
		DumpsWritten:        d.written.Load(),
		DumpsFailed:         d.failed.Load(),
		DumpsRefusedDisk:    d.refusedDisk.Load(),
		TriggersCoalesced:   d.coalesced.Load(),
		TriggersRateLimited: d.rateLimited.Load(),
		HookResultsDropped:  d.hookDropped.Load(),
		DumpsRotated:        d.rotated.Load(),
		Dumping:             d.writing.Load(),
		UnknownIngests:      r.unknown.Load(),
	}
	if e := d.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	d.mu.Lock()
	s.Pending = len(d.pending)
	s.LeftoverTmp = append([]string(nil), d.leftover...)
	d.mu.Unlock()
	return s
}
