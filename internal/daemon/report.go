//go:build !ecu

package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/report"
	"github.com/edr-lite/edr-lite/schema"
)

// The report pages of the HTTP server (docs/report.md, "Live and dump
// pages"): / is the live page (the recent window of every topic, read from
// the rings, reloading itself every LiveRefresh), /dumps/ lists the dump
// directory and /dumps/NAME is a dump's report (?format=json for the
// analysis), generated on demand and cached by name, size and
// modification time.
const (
	// LiveRefresh is how often the live page reloads itself.
	LiveRefresh = 5 * time.Second
	// liveMaxWindow bounds ?window= on the live page.
	liveMaxWindow = 10 * time.Minute
	// reportCacheEntries is how many dump reports are kept.
	reportCacheEntries = 8
)

// reports serves the report pages; one page is generated at a time.
type reports struct {
	d     *Daemon
	mu    sync.Mutex // one generation at a time; guards the fields below
	live  []byte     // the last live page
	liveT time.Time  // when it was made (wall clock, only to reuse it)
	liveW time.Duration
	cache []cachedReport
}

type cachedReport struct {
	name, format string
	size         int64
	mtime        time.Time
	page         []byte
}

// reportRoutes adds the report pages to mux.
func (d *Daemon) reportRoutes(mux *http.ServeMux) {
	rp := &reports{d: d}
	mux.HandleFunc("GET /{$}", rp.serveLive)
	mux.HandleFunc("GET /dumps/{$}", rp.serveList)
	mux.HandleFunc("GET /dumps/{name}", rp.serveDump)
}

var reportNav = []report.NavLink{{Href: "/", Text: "live"}, {Href: "/dumps/", Text: "dumps"}}

// LiveTopicType returns the schema type of a live topic when its source
// (or the configuration) declared one; raw bytes and undeclared types say
// nothing.
func LiveTopicType(info ingest.TopicInfo) (schema.Type, bool) {
	t := info.Type
	if t.IsZero() || t.MessageEncoding == schema.EncodingRaw || t.Validate() != nil {
		return schema.Type{}, false
	}
	return t, true
}

// liveWindow is the live page's default window: what a trigger now would
// dump (pre + post).
func (d *Daemon) liveWindow() time.Duration {
	return d.cfg.Recorder.Pre.D() + d.cfg.Recorder.Post.D()
}

func (rp *reports) serveLive(w http.ResponseWriter, r *http.Request) {
	win := rp.d.liveWindow()
	if s := r.URL.Query().Get("window"); s != "" {
		v, err := units.ParseDuration(s)
		if err != nil || v <= 0 || v > liveMaxWindow {
			http.Error(w, fmt.Sprintf("window %q: want a duration up to %s", s, liveMaxWindow), http.StatusBadRequest)
			return
		}
		win = v
	}
	http.NewResponseController(w).SetWriteDeadline(time.Time{}) // many rings to read
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.live == nil || rp.liveW != win || time.Since(rp.liveT) > LiveRefresh/2 {
		page, err := rp.d.livePage(win)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rp.live, rp.liveT, rp.liveW = page, time.Now(), win
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(rp.live)
}

// livePage analyses the last win of every topic's ring, up to the
// recorder's clock.
func (d *Daemon) livePage(win time.Duration) ([]byte, error) {
	now := d.rec.Now()
	from := now - int64(win)
	a, err := report.NewAnalyzer(report.Options{Title: "edr-lite live: " + hostname(), Live: true,
		VideoDecoder: report.FindVideoDecoder()}, from, now, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range d.rec.Topics() {
		if t.Freed {
			continue
		}
		c := t.Counters
		spec := report.TopicSpec{Name: mcap.TopicName(t.Info.Name, t.Info.Channel), Type: t.Info.Type.String(),
			Account: &report.Accounting{LostAtSource: c.LostAtSource, Oversize: c.RejectedOversize, SkippedBusy: c.SkippedBusy,
				Labels: []string{"losses counted since the recorder started"}}}
		if typ, ok := LiveTopicType(t.Info); ok {
			spec.Schema, spec.HasSchema, spec.SchemaFrom = typ, true, "the source"
		}
		id := a.Topic(spec)
		n, bytes := uint64(0), uint64(0)
		_, _, err := d.rec.ReadRange(t.ID, from, now, func(m *engine.Message) bool {
			a.Message(id, m.CaptureNs, m.GenNs, m.Data)
			n++
			bytes += uint64(len(m.Data))
			return true
		})
		if err != nil {
			continue // the ring went away (destroy_on_offline)
		}
		spec.Account.Messages, spec.Account.Bytes = n, bytes
	}
	r := a.Report()
	var b bytes.Buffer
	if err := report.WriteHTML(&b, r, report.HTMLOptions{RefreshS: int(LiveRefresh / time.Second), Nav: reportNav}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "recorder"
	}
	return h
}

// dumpList lists the dump directory, newest first.
func (d *Daemon) dumpList() ([]dump.File, error) {
	l, err := dump.OpenDir(d.cfg.Recorder.DumpDir).List()
	if err != nil {
		return nil, err
	}
	files := slices.Clone(l.Dumps)
	slices.Reverse(files)
	return files, nil
}

func (rp *reports) serveList(w http.ResponseWriter, r *http.Request) {
	files, err := rp.d.dumpList()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	items := make([]report.ListItem, 0, len(files))
	for _, f := range files {
		it := report.ListItem{Href: url.PathEscape(f.Name), Name: f.Name, Size: f.Size}
		if in, err := dumpfile.ReadInfo(f.Path); err != nil {
			it.Err = err.Error()
		} else {
			it.Messages = in.Messages
			for i, t := range in.Triggers {
				if i == 0 {
					it.TriggerNs = t.TimeNs
				}
				it.Reasons = append(it.Reasons, t.Reason)
			}
		}
		items = append(items, it)
	}
	var b bytes.Buffer
	if err := report.WriteListHTML(&b, "edr-lite dumps: "+rp.d.cfg.Recorder.DumpDir, items, reportNav); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func (rp *reports) serveDump(w http.ResponseWriter, r *http.Request) {
	// a large dump's report may take longer than HTTPWriteTimeout
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	name := r.PathValue("name")
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "html" {
		http.Error(w, fmt.Sprintf("format %q: want html or json", format), http.StatusBadRequest)
		return
	}
	files, err := rp.d.dumpList()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// only a dump of the listing: a name never reaches the file system
	i := slices.IndexFunc(files, func(f dump.File) bool { return f.Name == name })
	if i < 0 {
		http.Error(w, fmt.Sprintf("no dump %q in %s", name, rp.d.cfg.Recorder.DumpDir), http.StatusNotFound)
		return
	}
	st, err := os.Stat(files[i].Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	page := rp.cached(name, format, st)
	if page == nil {
		page, err = dumpPage(files[i].Path, format)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		rp.keep(cachedReport{name: name, format: format, size: st.Size(), mtime: st.ModTime(), page: page})
	}
	if format == "json" {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.Write(page)
}

// cached returns the cached page of a dump whose size and modification
// time have not changed, else nil.
func (rp *reports) cached(name, format string, st os.FileInfo) []byte {
	for _, c := range rp.cache {
		if c.name == name && c.format == format && c.size == st.Size() && c.mtime.Equal(st.ModTime()) {
			return c.page
		}
	}
	return nil
}

// keep caches a page, dropping the oldest beyond reportCacheEntries.
func (rp *reports) keep(c cachedReport) {
	rp.cache = slices.DeleteFunc(rp.cache, func(o cachedReport) bool { return o.name == c.name && o.format == c.format })
	rp.cache = append(rp.cache, c)
	if len(rp.cache) > reportCacheEntries {
		rp.cache = slices.Delete(rp.cache, 0, len(rp.cache)-reportCacheEntries)
	}
}

// dumpPagesMade counts the dump pages generated (the cache's test reads
// it).
var dumpPagesMade atomic.Int64

func dumpPage(path, format string) ([]byte, error) {
	dumpPagesMade.Add(1)
	r, err := report.FromDumps([]string{path}, report.DumpOptions{Options: report.Options{VideoDecoder: report.FindVideoDecoder()}, Verify: true})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if format == "json" {
		err = json.NewEncoder(&b).Encode(r)
	} else {
		err = report.WriteHTML(&b, r, report.HTMLOptions{Nav: reportNav})
	}
	return b.Bytes(), err
}
