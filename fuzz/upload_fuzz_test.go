package fuzz

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/upload"
)

// FuzzUploadJournal reads arbitrary bytes as the upload queue's journal and
// as its ledger (the files a crash, a bad disk or a hand edit leave in a
// dump directory), through ReadState, the reader of "edr-lite ls".
// Properties: no panic; an unreadable journal is an error wrapping
// ErrJournal; every state named is of a plain file name (no path) and one
// of the four states.
func FuzzUploadJournal(f *testing.F) {
	f.Add([]byte(`{"version":1,"queue":[{"file":"a.pack","size":3,"queued_ns":1,"upload_id":"x","attempts":2,"last_error":"e"}]}`), true)
	f.Add([]byte("{\"file\":\"a.pack\",\"size\":1,\"crc32c\":\"AAAAAA==\",\"key\":\"k\",\"at_ns\":1}\n{\"file\""), false)
	f.Fuzz(func(t *testing.T, data []byte, asJournal bool) {
		dir := t.TempDir()
		name := upload.LedgerName
		if asJournal {
			name = upload.JournalName
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		states, ok, err := upload.ReadState(dir)
		if !ok {
			t.Fatal("ReadState: a queue file is there, ok false")
		}
		if err != nil && !errors.Is(err, upload.ErrJournal) {
			t.Fatalf("error %v does not wrap ErrJournal", err)
		}
		for file, s := range states {
			if asJournal && (file == "" || filepath.Base(file) != file) {
				t.Fatalf("journal names %q, not a file of the directory", file)
			}
			switch s.State {
			case "queued", "uploading", "failed", "uploaded":
			default:
				t.Fatalf("state %q", s.State)
			}
		}
	})
}

// FuzzUploadTemplate parses arbitrary key templates and schedule windows
// (configuration values). Properties: no panic; a template that parses
// expands to a key with no empty segment and never to "", and names the
// dump; a window that parses reports itself open at the time NextOpen
// gives.
func FuzzUploadTemplate(f *testing.F) {
	f.Add(upload.DefaultKey, "22:00-06:00")
	f.Add("{prefix}/{year}/{month}/{day}/{hour}/{name}.x", "12:00-13:00, 20:00-24:00")
	f.Fuzz(func(t *testing.T, tmpl, window string) {
		if tp, err := upload.ParseTemplate(tmpl); err == nil {
			k := tp.Expand(upload.KeyFields{Prefix: "p", Vehicle: "v", Time: time.Unix(1_796_000_000, 0), File: "d.pack", Table: "t"})
			if k == "" || strings.Contains(k, "//") || strings.HasPrefix(k, "/") || strings.HasSuffix(k, "/") {
				t.Fatalf("template %q expands to key %q", tmpl, k)
			}
			if !strings.Contains(k, "d") {
				t.Fatalf("template %q: key %q does not name the dump", tmpl, k)
			}
		}
		w, err := upload.ParseWindow(window)
		if err != nil {
			return
		}
		now := time.Date(2026, 12, 3, 7, 30, 0, 0, time.Local)
		if n := w.NextOpen(now); !w.Open(n) {
			t.Fatalf("window %q: NextOpen(%v) = %v, not open", window, now, n)
		}
	})
}
