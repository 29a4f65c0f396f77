// Discovery: the Consumer's watch loop, which learns of segments from
// inotify events (watch_linux.go) with a periodic rescan as a safety net, or
// by polling the directory when inotify is unavailable.

package shm

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// startWatchLocked opens the inotify watch on the directory (unless
// NoInotify; when that fails the error is reported and the consumer polls)
// and starts the watch loop.
func (c *Consumer) startWatchLocked() {
	if !c.opts.NoInotify {
		f, err := watchDir(c.dir)
		if err != nil {
			c.reportLocked(fmt.Errorf("shm: inotify unavailable, polling every %v: %w", c.opts.ScanInterval, err))
		} else {
			c.notify = f
		}
	}
	c.watchWG.Add(1)
	go c.watch()
}

// watch is the discovery loop: it scans the directory once, then notices
// each inotify event (rescanning after a queue overflow) and rescans every
// ScanInterval (ten times that when inotify works), until Close.
func (c *Consumer) watch() {
	defer c.watchWG.Done()
	events := make(chan string, 64)
	if c.notify != nil {
		c.watchWG.Add(1)
		go func() {
			defer c.watchWG.Done()
			readEvents(c.notify, events, c.stopCh)
		}()
	}
	c.scan()
	every := c.opts.ScanInterval
	if c.notify != nil {
		every *= 10
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case name := <-events:
			if name == "" { // queue overflow: rescan
				c.scan()
			} else {
				c.notice(name)
				c.reportRefused()
			}
		case <-t.C:
			c.scan()
		}
	}
}

// scan notices every name in the directory (and forgets refused names
// that are gone).
func (c *Consumer) scan() {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		c.report(fmt.Errorf("shm: scan %s: %w", c.dir, err))
		return
	}
	seen := make(map[string]bool, len(ents))
	for _, e := range ents {
		seen[e.Name()] = true
		c.notice(e.Name())
	}
	c.mu.Lock()
	for name := range c.refused {
		if !seen[name] {
			delete(c.refused, name)
		}
	}
	c.mu.Unlock()
	c.reportRefused()
}

// followRefusedLocked follows segments refused for MaxSegments while there
// is room, in name order, when a follower ends: at once, not at the next
// rescan. Names whose files are gone are forgotten.
func (c *Consumer) followRefusedLocked() {
	m := c.opts.MaxSegments
	if m <= 0 || len(c.refused) == 0 || c.stop.Load() {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.refused)) {
		if len(c.followers) >= m {
			return
		}
		delete(c.refused, name)
		if _, err := lstat(filepath.Join(c.dir, name)); err == nil {
			c.startLocked(name)
		}
	}
}

// reportRefused reports, in one error, the segments refused since the last
// report for MaxSegments.
func (c *Consumer) reportRefused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.newRefused == 0 {
		return
	}
	c.reportLocked(fmt.Errorf("%w: %d more segments of %s not followed (%d refused in all, first %s): %d segments are followed, the most allowed (max_topics)",
		ErrTooManySegments, c.newRefused, c.dir, len(c.refused), c.firstRefused, len(c.followers)))
	c.newRefused, c.firstRefused = 0, ""
}

// isSegmentName accepts the names a producer gives segments; temporary files
// (leading '.') and anything else are ignored.
func isSegmentName(name string) bool {
	return strings.HasSuffix(name, SegmentSuffix) && len(name) > len(SegmentSuffix) &&
		name[0] != '.' && !strings.ContainsRune(name, '/')
}

// notice starts following name, or tells its follower the file changed.
func (c *Consumer) notice(name string) {
	if !isSegmentName(name) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop.Load() {
		return
	}
	if f := c.followers[name]; f != nil {
		f.changed.Store(true)
		f.wake()
		return
	}
	path := filepath.Join(c.dir, name)
	if id, ok := c.finished[name]; ok {
		if fi, err := lstat(path); err == nil && fi.id == id {
			return // read to the end already
		}
		delete(c.finished, name)
	}
	if m := c.opts.MaxSegments; m > 0 && len(c.followers) >= m {
		if _, err := lstat(path); err != nil {
			// gone (the event of a removal): nothing to refuse
			delete(c.refused, name)
			return
		}
		if !c.refused[name] {
			c.refused[name] = true
			if c.newRefused++; c.firstRefused == "" {
				c.firstRefused = name
			}
		}
		return
	}
	delete(c.refused, name)
	c.startLocked(name)
}
