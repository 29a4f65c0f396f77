package dump

// Status is a snapshot of the dump pipeline.
type Status struct {
	// Written, failed (any cause), refused for low disk; triggers merged
	// into a waiting dump, rejected by the rate limit; results the hooks
	// never saw because their queue was full; old dumps deleted by
	// rotation.
	Written, Failed, RefusedDisk           uint64
	TriggersCoalesced, TriggersRateLimited uint64
	HookResultsDropped, Rotated            uint64
	// ManualRateLimited counts operators' triggers (control socket,
	// signal, Go API) refused by their own rate limit
	// (Config.MaxManualPerMinute); TriggersRateLimited counts the rules'.
	ManualRateLimited uint64
	// ManualRefused and RuleRefused count triggers refused because they
	// selected no topic or no message.
	ManualRefused, RuleRefused uint64
	// Late counts, over every dump written, messages a topic's event-time
	// order could not place (dumpinfo.TopicAccount.Late).
	Late uint64
	// Rewritten counts, over every dump written, frames or chunks written
	// again without payloads producers overwrote (Result.Rewritten).
	Rewritten uint64
	// Pending is the number of dumps waiting for their post window.
	Pending int
	// Dumping reports a dump being written now.
	Dumping bool
	// LastError is the last dump failure ("" when none).
	LastError string
	// LeftoverTmp lists .tmp files found in the dump directory at New:
	// dumps interrupted by a crash ("edr-lite recover" salvages them).
	LeftoverTmp []string
}

// Status returns a snapshot of the dumper.
func (d *Dumper) Status() Status {
	s := Status{
		Written:             d.written.Load(),
		Failed:              d.failed.Load(),
		RefusedDisk:         d.refusedDisk.Load(),
		TriggersCoalesced:   d.coalesced.Load(),
		TriggersRateLimited: d.rateLimited.Load(),
		ManualRateLimited:   d.rateLimitedManual.Load(),
		ManualRefused:       d.refusedManual.Load(),
		RuleRefused:         d.refusedRule.Load(),
		HookResultsDropped:  d.hookDropped.Load(),
		Rotated:             d.rotated.Load(),
		Late:                d.late.Load(),
		Rewritten:           d.rewritten.Load(),
		Dumping:             d.writing.Load(),
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
