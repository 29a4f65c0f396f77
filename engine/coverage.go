package engine

// Coverage is what the recorder knows about why a topic's ring may hold
// less than a window asks: since when the topic is recorded, whether its
// producer went offline, and up to when it evicted messages. The dump
// pipeline turns it into the Short* causes of dumpinfo.TopicAccount.
type Coverage struct {
	// DiscoveredNs is when the topic was first discovered (recorder
	// clock): nothing before it was ever recorded.
	DiscoveredNs int64
	// OfflineNs is when the producer went offline (recorder clock); 0
	// while it is online.
	OfflineNs int64
	// EvictedBelowNs: every message the ring evicted (byte cap or
	// retention) was captured before it; 0 when none was evicted.
	EvictedBelowNs int64
}

// Coverage returns what the recorder knows of w's topic (see Coverage).
func (r *Recorder) Coverage(w *Window) Coverage {
	t := w.t
	c := Coverage{DiscoveredNs: t.discoveredNs, EvictedBelowNs: t.ring.pubEvictedBelow.Load()}
	if !t.online.Load() {
		c.OfflineNs = t.offlineNs.Load()
	}
	return c
}

// Newest returns the capture time of the newest message held by the
// topics the globs select (empty = every topic), and false when they hold
// none. It is how a trigger "at the last message" finds its time.
func (r *Recorder) Newest(globs []string) (int64, bool) {
	r.mu.Lock()
	ts := make([]*topic, 0, len(r.topics))
	for _, t := range r.topics {
		if !t.freed && selected(globs, &t.info) {
			t.pins.Add(1) // keep the ring while reading it
			ts = append(ts, t)
		}
	}
	r.mu.Unlock()
	var newest int64
	found := false
	for _, t := range ts {
		if c := t.ring.counters(); c.HeldMessages > 0 && (!found || c.NewestNs > newest) {
			newest, found = c.NewestNs, true
		}
		t.pins.Add(-1)
		r.maybeFree(t)
	}
	return newest, found
}
