package shm

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/edr-lite/edr-lite/ingest"
)

// DrainFile reads the segment file at path once, from its oldest record to
// its write cursor, into sink, and returns the segment's counters. It
// applies every check a Consumer does (owner, sizes, header, records) and
// reads only what the file holds, so it is safe on any file: a broken one
// gives a *SegmentError. It does not report the topic offline or remove the
// file. Useful for post-mortem reads of segments left by a crashed system.
func DrainFile(path string, sink ingest.Sink, opts ConsumerOptions) (st SegmentStats, err error) {
	if err := platformSupported(); err != nil {
		return st, err
	}
	opts.setDefaults()
	st.Path = path
	s, err := openSegment(path, &opts, &bigBuffer{}, nil)
	if err != nil {
		return st, err
	}
	defer s.close()
	st.Topic = s.info
	if s.typeErr != nil {
		st.TypeErr = s.typeErr // recorded all the same, as raw bytes
	}
	defer func() {
		st.Messages, st.Bytes = s.received.Load(), s.bytes.Load()
		st.Lost, st.Rejected = s.lost.Load(), s.rejected.Load()
		st.Err = err
	}()
	id, err := sink.Discover(s.info)
	if err != nil {
		return st, fmt.Errorf("shm: segment %s: topic %q not recorded: %w", path, s.info.Name, err)
	}
	st.Recording, st.Online = true, true
	s.direct, _ = sink.(ingest.DirectSink)
	s.batcher, _ = sink.(ingest.BatchSink)
	// Each chunk advances by at least one record (8 bytes) or ends the
	// drain, so capacity/8 chunks always suffice.
	_, done, err := drainGuarded(s, sink, id, int(s.h.capacity/RecordAlign)+2)
	if err == nil && !done {
		err = fmt.Errorf("BUG: shm: %s not drained within its bound", path)
	}
	return st, err
}

// drainGuarded is segment.drain with a fault on the mapping (the file was
// truncated under us) turned into a quarantine error. The calling goroutine
// must have debug.SetPanicOnFault(true); drainGuarded sets it for the call.
func drainGuarded(s *segment, sink ingest.Sink, id ingest.TopicID, budget int) (n int, done bool, err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			err = s.fail("file", 0, corruptf(ErrTruncated, "fault reading the mapping (file truncated while mapped?): %v", r))
		}
	}()
	return s.drain(sink, id, budget)
}

// isFault reports whether a recovered value is a memory fault turned into a
// panic by debug.SetPanicOnFault.
func isFault(r any) bool {
	_, ok := r.(interface {
		runtime.Error
		Addr() uintptr
	})
	return ok
}
