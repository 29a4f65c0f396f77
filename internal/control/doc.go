// Package control is the operator's channel to a running recorder: a unix
// socket (mode 0600) speaking one JSON request and one JSON response per
// connection, used by "edr-lite trigger", "edr-lite status" and rule reload.
//
// It is not for: remote access (the socket is local and owner-only) or
// streaming data.
//
// # Caveats
//
// A Server outlives its clients: a failed accept (EMFILE when the process is
// out of descriptors) is retried with back-off, a client has RequestTimeout
// to send one request line of at most MaxRequest bytes, and at most
// MaxConns connections are served at once (the rest wait in the backlog).
//
// A Server calls its Handler from one goroutine per connection: the Handler
// must be safe for concurrent use. A trigger request holds its connection
// open until the dump is finalized (or fails), which can take the post
// window plus the write time.
package control
