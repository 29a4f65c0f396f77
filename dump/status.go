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
	// RotatedFor counts the dumps rotation deleted by the bound each
	// served: ReasonMaxFiles, ReasonMaxTotalBytes (after a dump, never a
	// kept one) and ReasonMinFreeDisk (before a dump, to make its room).
	RotatedFor map[string]uint64
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
	// LeftoverTmp lists the dumps an earlier run left interrupted (a
	// crash, a power cut), found at New and kept as NAME.interrupted
	// ("edr-lite recover" salvages them).
	LeftoverTmp []string
	// LeftoverRemoved lists the empty leftovers New removed: a crash right
	// after the file was created left nothing to salvage.
	LeftoverRemoved []string
	// SigningKey is the ID of the key dumps are signed with ("": signing
	// off); Chain the directory's chain and ChainHead the counter of its
	// last dump; ChainErrors counts dumps written but left out of the
	// chain or rotations it could not record (LastError says which);
	// ChainNotes what opening the chain found (a ledger set aside, the
	// key changed, an interrupted dump taken in).
	SigningKey  string
	Chain       string
	ChainHead   uint64
	ChainErrors uint64
	ChainNotes  []string
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
		RotatedFor:          map[string]uint64{},
		Late:                d.late.Load(),
		Rewritten:           d.rewritten.Load(),
		Dumping:             d.writing.Load(),
	}
	for i, r := range rotationReasons {
		s.RotatedFor[r] = d.rotatedFor[i].Load()
	}
	if e := d.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	if d.chain != nil {
		s.SigningKey, s.Chain = d.cfg.Signer.ID().String(), d.chain.ID().String()
		s.ChainHead = d.chain.Next().Counter - 1
		s.ChainErrors = d.chainErrs.Load()
		s.ChainNotes = append([]string(nil), d.chainNotes...)
	}
	d.mu.Lock()
	s.Pending = len(d.pending)
	s.LeftoverTmp = append([]string(nil), d.leftover...)
	s.LeftoverRemoved = append([]string(nil), d.leftRemoved...)
	d.mu.Unlock()
	return s
}
