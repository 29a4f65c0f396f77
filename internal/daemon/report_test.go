//go:build !ecu

package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

// remoteRef finds what a self-contained page must not hold: a URL (the
// inlined chart library's banner aside, see selfContained), an @import, a
// script loaded from elsewhere.
var remoteRef = regexp.MustCompile(`(?i)(https?|ftp)://|@import|<script[^>]*\bsrc\s*=`)

// selfContained drops the inlined uPlot's banner (its source, in a script
// comment), the one URL a report page holds.
func selfContained(page string) string {
	return strings.ReplaceAll(page, "/*! https://github.com/leeoniya/uPlot (", "")
}

// TestReportPages: the live page shows the recorder's topics from the
// rings and reloads itself; /dumps/ lists the dumps; /dumps/NAME is a
// dump's report, made once and served from the cache until the file
// changes; nothing outside the listing is served.
func TestReportPages(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	d := startDaemon(t, cfg)
	// a typed producer: the live page decodes and plots its field
	p, err := shm.NewProducer(cfg.Sources.SHM[0].Dir, shm.ProducerOptions{Name: "vehicle/speed",
		Type: ingest.Packed("vehicle.Speed", "f32le speed (m/s)")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFor(t, "the speed topic", func() bool { return len(d.Status().Topics) == 1 })
	for i := 0; i < 50; i++ {
		p.Publish(time.Now().UnixNano(), []byte{byte(i), 0, 0, 0})
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, "the messages", func() bool {
		st := d.Status()
		return len(st.Topics) == 1 && st.Topics[0].Written >= 50
	})
	get := func(path string, want int) (string, http.Header) {
		t.Helper()
		resp, err := http.Get("http://" + d.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %s, want %d: %s", path, resp.Status, want, body)
		}
		return string(body), resp.Header
	}

	live, h := get("/", 200)
	for _, want := range []string{`<meta http-equiv="refresh" content="5">`, ">vehicle/speed</text>", "live, recent window of every topic",
		">speed (m/s)</text>", "x-edr-packed from the source",
		`<a href="/dumps/">dumps</a>`, "losses counted since the recorder started"} {
		if !strings.Contains(live, want) {
			t.Errorf("live page lacks %q", want)
		}
	}
	if m := remoteRef.FindString(selfContained(live)); m != "" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("live page: %q, Cache-Control %q", m, h.Get("Cache-Control"))
	}
	if !regexp.MustCompile(`<td class="t">vehicle/speed</td><td class="n">([1-9][0-9]*)</td>`).MatchString(live) {
		t.Error("live timing table has no messages for vehicle/speed")
	}
	get("/?window=1h", 400)
	get("/?window=2s", 200)

	_, res, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "pages-test"}, true)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(res.Path)
	list, _ := get("/dumps/", 200)
	if !strings.Contains(list, `href="`+name+`"`) || !strings.Contains(list, "pages-test") || remoteRef.MatchString(list) {
		t.Errorf("dump list lacks %s:\n%s", name, list)
	}
	made := dumpPagesMade.Load()
	page, _ := get("/dumps/"+name, 200)
	if !strings.Contains(page, "pages-test") || !strings.Contains(page, ">vehicle/speed</text>") || remoteRef.MatchString(selfContained(page)) ||
		!strings.Contains(page, ">speed (m/s)</text>") || !strings.Contains(page, "x-edr-packed from the dump") {
		t.Errorf("dump page:\n%.2000s", page)
	}
	again, _ := get("/dumps/"+name, 200)
	if again != page || dumpPagesMade.Load() != made+1 {
		t.Errorf("second request made the page again (%d pages made)", dumpPagesMade.Load()-made)
	}
	// a changed file (size or modification time) is reported again
	later := time.Now().Add(time.Minute)
	os.Chtimes(res.Path, later, later)
	get("/dumps/"+name, 200)
	if dumpPagesMade.Load() != made+2 {
		t.Errorf("a touched dump was served from the cache")
	}
	js, h := get("/dumps/"+name+"?format=json", 200)
	var doc struct {
		Triggers []struct{ Reason string } `json:"triggers"`
		Topics   []struct{ Name string }   `json:"topics"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || h.Get("Content-Type") != "application/json" ||
		len(doc.Triggers) != 1 || doc.Triggers[0].Reason != "pages-test" || len(doc.Topics) != 1 {
		t.Errorf("json: %v %+v", err, doc)
	}
	get("/dumps/nope.pack", 404)
	get("/dumps/..%2fedr.sock", 404)
	get("/dumps/"+name+"?format=pdf", 400)
}
