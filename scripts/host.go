package scripts

import (
	"fmt"
	"os"
	"sync"
)

// Host holds several rules and drives them in message time: the same
// messages through the same rules give the same triggers on any machine
// and at any replay speed.
//
// Feed, Tick, DumpFinished, Add, Reload and Close must be called from one
// goroutine (the one driving the rules); Status is safe from any goroutine.
type Host struct {
	mu    sync.Mutex // guards rules against Status while Add/Reload write
	rules []*Rule
}

// NewHost returns a host over rules (it takes ownership: Close closes them).
func NewHost(rules ...*Rule) (*Host, error) {
	h := &Host{}
	for _, r := range rules {
		if err := h.Add(r); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Add adds a rule; names must be unique.
func (h *Host) Add(r *Rule) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.rules {
		if o.decl.Name == r.decl.Name {
			return fmt.Errorf("%w: %s: rule %q already loaded from %s", ErrDeclaration, r.file, r.decl.Name, o.file)
		}
	}
	h.rules = append(h.rules, r)
	return nil
}

// Rules returns the rules in the order they were added.
func (h *Host) Rules() []*Rule {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Rule(nil), h.rules...)
}

// Feed delivers, for every rule, the ticks due up to m.TS and then m to
// on_message when its topic matches. Message time should not go backwards
// by more than the rules tolerate: ticks never do.
func (h *Host) Feed(m *Message) {
	for _, r := range h.rules {
		r.Feed(m)
	}
}

// Tick delivers the ticks due up to now (message time) to every rule.
func (h *Host) Tick(now int64) {
	for _, r := range h.rules {
		r.Tick(now)
	}
}

// DumpFinished calls every rule's on_dump_finished.
func (h *Host) DumpFinished(d DumpResult) {
	for _, r := range h.rules {
		r.DumpFinished(d)
	}
}

// Reload reloads the named rule from its file. When the new version fails
// to load, the old one keeps running, the error is returned and shown in
// Status as ReloadError.
func (h *Host) Reload(name string) error {
	r := h.find(name)
	if r == nil {
		return fmt.Errorf("%w: %q", ErrNoRule, name)
	}
	src, err := readRule(r)
	if err != nil {
		return err
	}
	return h.ReloadSource(name, src)
}

// readRule reads the file r was loaded from, for a reload: a shipped
// rule's from the binary (it has no file on disk).
func readRule(r *Rule) (string, error) {
	read := os.ReadFile
	if r.shipped {
		read = Shipped.ReadFile
	}
	b, err := read(r.file)
	if err != nil {
		err = fmt.Errorf("scripts: reload %s: %w (old version keeps running)", r.decl.Name, err)
		r.st.setReloadErr(err)
		return "", err
	}
	return string(b), nil
}

// ReloadSource replaces the named rule by src, keeping its file name,
// options, counters, cooldown and rate-limit state and tick phase.
func (h *Host) ReloadSource(name, src string) error {
	old := h.find(name)
	if old == nil {
		return fmt.Errorf("%w: %q", ErrNoRule, name)
	}
	nr, err := reload(old, src, h.Rules())
	if err != nil {
		return err
	}
	h.mu.Lock()
	for i, r := range h.rules {
		if r == old {
			h.rules[i] = nr
		}
	}
	h.mu.Unlock()
	old.Close()
	return nil
}

// reload loads src as the new version of old, refusing a name that
// another of others already has. On success the new rule takes over old's
// counters, cooldown and rate-limit state and tick phase (old is not closed);
// on failure old keeps running and records the error.
func reload(old *Rule, src string, others []*Rule) (*Rule, error) {
	nr, err := LoadSource(old.file, src, old.opts)
	if err == nil {
		for _, o := range others {
			if o != old && o.decl.Name == nr.decl.Name {
				nr.Close()
				err = fmt.Errorf("%w: %s: rule %q already loaded from %s", ErrDeclaration, old.file, nr.decl.Name, o.file)
				break
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("scripts: reload %s: %w (old version keeps running)", old.decl.Name, err)
		old.st.setReloadErr(err)
		old.logger.Error("rule reload failed", "rule", old.decl.Name, "err", err)
		return nil, err
	}
	nr.st = old.st
	nr.calls = old.calls // callSeq goes on rising: Status never takes a new call for an old one
	nr.shipped = old.shipped
	nr.st.reloads.Add(1)
	nr.st.mu.Lock()
	nr.st.disabled, nr.st.why, nr.st.reloadErr = false, "", ""
	nr.st.mu.Unlock()
	nr.fired, nr.lastFire, nr.now = old.fired, old.lastFire, old.now
	if nr.decl.MaxPerMinute == old.decl.MaxPerMinute {
		nr.window, nr.wpos = append(nr.window[:0], old.window...), old.wpos
	}
	if nr.decl.Tick == old.decl.Tick {
		nr.nextTick = old.nextTick
	}
	return nr, nil
}

func (h *Host) find(name string) *Rule {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rules {
		if r.decl.Name == name {
			return r
		}
	}
	return nil
}

// Status returns every rule's counters. Safe for concurrent use.
func (h *Host) Status() []RuleStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]RuleStatus, len(h.rules))
	for i, r := range h.rules {
		out[i] = r.Status()
	}
	return out
}

// Close closes every rule.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rules {
		r.Close()
	}
	h.rules = nil
}

func (s *stats) setReloadErr(err error) {
	s.mu.Lock()
	s.reloadErr = err.Error()
	s.mu.Unlock()
}
