package engine

import "github.com/edr-lite/edr-lite/arena"

// Status is a recorder-wide snapshot.
type Status struct {
	Arena  arena.Usage
	Topics []TopicStatus
	// UnknownIngests counts Ingest calls for ids never handed out.
	UnknownIngests uint64
}

// Status returns a snapshot of the recorder.
func (r *Recorder) Status() Status {
	return Status{Arena: r.arena.Usage(), Topics: r.Topics(), UnknownIngests: r.unknown.Load()}
}
