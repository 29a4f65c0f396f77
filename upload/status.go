package upload

import (
	"time"
)

// Status is the upload queue's state, for "edr-lite status", /status and
// /metrics.
type Status struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	// State: "idle", "uploading", "backing off" (after a failure),
	// "waiting for window", "stopped".
	State         string `json:"state"`
	Queued        int    `json:"queued"` // dumps not yet confirmed, failed ones included
	Failed        int    `json:"failed"` // queued dumps whose last attempt failed
	Uploading     string `json:"uploading,omitempty"`
	UploadingSent int64  `json:"uploading_sent,omitempty"` // bytes of the request in flight
	UploadingSize int64  `json:"uploading_size,omitempty"`
	Uploaded      uint64 `json:"uploaded"`       // confirmed since start
	UploadedBytes uint64 `json:"uploaded_bytes"` // their sizes
	SentBytes     uint64 `json:"sent_bytes"`     // bytes sent, retries included
	Evicted       uint64 `json:"evicted"`        // queued dumps rotation deleted (disk critically low)
	// LastEvicted says which queued dump rotation deleted last, and why.
	LastEvicted  string  `json:"last_evicted,omitempty"`
	Missing      uint64  `json:"missing"` // queued dumps deleted by someone else
	LastError    string  `json:"last_error,omitempty"`
	LastErrorAt  string  `json:"last_error_at,omitempty"` // RFC 3339
	RetryInS     float64 `json:"retry_in_s,omitempty"`
	JournalError string  `json:"journal_error,omitempty"`
	Window       string  `json:"window,omitempty"`
	WindowOpen   bool    `json:"window_open"`
	Bandwidth    int64   `json:"bandwidth,omitempty"` // bytes/s cap
	// Entries lists the queue, oldest first (the first MaxStatusEntries).
	Entries []EntryStatus `json:"entries"`
}

// MaxStatusEntries bounds Status.Entries.
const MaxStatusEntries = 100

// EntryStatus is one queued dump.
type EntryStatus struct {
	File      string `json:"file"`
	State     string `json:"state"` // "queued", "uploading", "failed"
	Size      int64  `json:"size"`
	Key       string `json:"key,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// Status returns a snapshot.
func (u *Uploader) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.o.Now()
	st := Status{Endpoint: u.o.Endpoint, Bucket: u.o.Bucket, State: u.state, Queued: len(u.queue),
		Uploaded: u.uploaded, UploadedBytes: u.upBytes, SentBytes: uint64(u.c.total.Load() + u.inflight()),
		Evicted: u.evicted, LastEvicted: u.lastEvicted, Missing: u.missing, LastError: u.lastErr, JournalError: u.journalErr,
		Window: u.o.Window, WindowOpen: u.window.Open(now), Bandwidth: u.o.Bandwidth, Entries: []EntryStatus{}}
	if !u.lastErrAt.IsZero() {
		st.LastErrorAt = u.lastErrAt.UTC().Format(time.RFC3339)
	}
	if u.current != nil {
		st.Uploading, st.UploadingSize, st.UploadingSent = u.current.File, u.curSize, u.c.sent.Load()
	}
	if now.Before(u.globalUntil) {
		st.RetryInS = u.globalUntil.Sub(now).Seconds()
	}
	for _, e := range u.queue {
		es := EntryStatus{File: e.File, State: "queued", Size: e.Size, Key: e.Key, Attempts: e.Attempts, LastError: e.LastError}
		switch {
		case e == u.current:
			es.State = "uploading"
		case e.LastError != "":
			es.State = "failed"
		}
		if es.State == "failed" {
			st.Failed++
		}
		if len(st.Entries) < MaxStatusEntries {
			st.Entries = append(st.Entries, es)
		}
	}
	return st
}

// inflight is what the request in flight sent so far (counted into total
// when it ends).
func (u *Uploader) inflight() int64 {
	if u.current == nil {
		return 0
	}
	return u.c.sent.Load()
}
