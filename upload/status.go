package upload

import (
	"maps"
	"slices"
	"time"
)

// Status is the upload queue's state, for "edr-lite status", /status and
// /metrics.
type Status struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	// State: "idle", "uploading", "backing off" (the queued dumps failed
	// on their own and wait for their next attempt), "paused" (a
	// server-wide error: the whole queue waits, Paused says why),
	// "waiting for window", "stopped".
	State string `json:"state"`
	// Paused is why the whole queue waits: the kind of server-wide error
	// ("bucket does not exist", "credentials rejected by the server",
	// "TLS handshake with the server failed", "server unreachable",
	// "server error"); "" when it does not.
	Paused        string `json:"paused,omitempty"`
	Queued        int    `json:"queued"` // dumps not yet confirmed, failed ones included
	Failed        int    `json:"failed"` // queued dumps whose last attempt failed
	Uploading     string `json:"uploading,omitempty"`
	UploadingSent int64  `json:"uploading_sent,omitempty"` // bytes of the request in flight
	UploadingSize int64  `json:"uploading_size,omitempty"`
	Uploaded      uint64 `json:"uploaded"`       // confirmed since start
	UploadedBytes uint64 `json:"uploaded_bytes"` // their sizes
	SentBytes     uint64 `json:"sent_bytes"`     // bytes sent, retries and resends included: only ever grows
	Evicted       uint64 `json:"evicted"`        // queued dumps rotation deleted to make room for new ones
	// EvictedFor counts them by the bound each deletion served
	// (dump.ReasonMinFreeDisk).
	EvictedFor map[string]uint64 `json:"evicted_for,omitempty"`
	// LastEvicted says which queued dump rotation deleted last, and why.
	LastEvicted string `json:"last_evicted,omitempty"`
	Missing     uint64 `json:"missing"` // queued dumps deleted by someone else
	LastError   string `json:"last_error,omitempty"`
	// LastErrorKind is its kind (KindOf): credentials, bucket, tls,
	// network, server (server-wide), file, object.
	LastErrorKind string  `json:"last_error_kind,omitempty"`
	LastErrorAt   string  `json:"last_error_at,omitempty"` // RFC 3339
	RetryInS      float64 `json:"retry_in_s,omitempty"`
	JournalError  string  `json:"journal_error,omitempty"`
	// SetAsideFiles counts the damaged copies of the journal and the
	// ledger in the dump directory (NAME.bad.N), set aside at a start that
	// could not read them (edr_upload_set_aside_files); SetAside names
	// them (the first MaxStatusEntries).
	SetAsideFiles int      `json:"set_aside_files,omitempty"`
	SetAside      []string `json:"set_aside,omitempty"`
	Window        string   `json:"window,omitempty"`
	WindowOpen    bool     `json:"window_open"`
	Bandwidth     int64    `json:"bandwidth,omitempty"` // bytes/s cap
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
	ErrorKind string `json:"error_kind,omitempty"` // KindOf(the last error)
}

// Status returns a snapshot.
func (u *Uploader) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.o.Now()
	st := Status{Endpoint: u.o.Endpoint, Bucket: u.o.Bucket, State: u.state, Queued: len(u.queue),
		Uploaded: u.uploaded, UploadedBytes: u.upBytes, SentBytes: uint64(u.c.total.Load()), LastErrorKind: u.lastErrKind,
		Evicted: u.evicted, EvictedFor: maps.Clone(u.evictedFor), LastEvicted: u.lastEvicted, Missing: u.missing, LastError: u.lastErr, JournalError: u.journalErr,
		SetAsideFiles: len(u.setAside), SetAside: slices.Clone(u.setAside[:min(len(u.setAside), MaxStatusEntries)]), Window: u.o.Window, WindowOpen: u.window.Open(now), Bandwidth: u.o.Bandwidth, Entries: []EntryStatus{}}
	if !u.lastErrAt.IsZero() {
		st.LastErrorAt = u.lastErrAt.UTC().Format(time.RFC3339)
	}
	if u.current != nil {
		st.Uploading, st.UploadingSize, st.UploadingSent = u.current.File, u.curSize, u.c.sent.Load()
	}
	if now.Before(u.globalUntil) {
		st.RetryInS = u.globalUntil.Sub(now).Seconds()
		st.Paused = u.paused
	}
	for _, e := range u.queue {
		es := EntryStatus{File: e.File, State: "queued", Size: e.Size, Key: e.Key, Attempts: e.Attempts, LastError: e.LastError, ErrorKind: e.LastErrorKind}
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
