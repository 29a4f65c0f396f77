// Package feedcheck compares the outputs a system under test produced with
// the ones a recording holds, and reports every difference as a Mismatch
// naming the step, the field, the expected and the got value: the
// reference replay's FeedCheck (Exact, Tolerance, None). The closed loop
// over processes (package replay, "edr-lite replay --expect") and the
// in-process replay of a Go step function (package step) both compare
// through it, so a mismatch reads the same whichever harness found it.
//
// In one paragraph: a Check says how one topic's outputs are compared —
// Exact (the bytes; with a schema.Decoder each differing numeric field is
// named), Tolerance (every numeric field within Abs + Rel·|recorded|, or
// the bounds of its FieldTolerance), None (only the count) — and how they
// are paired (Align: by sequence, by producer time, or nearest in time
// within a window). Compare does it for two lists of Messages; a Comparer
// does it for outputs already attributed to input steps (Recorded,
// Published) and hands each Mismatch to a callback.
//
// It is not for: collecting the outputs (replay's private recorder, step's
// replay), reading dumps, or printing reports.
//
// # Caveats
//
//   - Messages are untrusted: decoding is bounded by each message and never
//     panics (the fuzz target FuzzFeedCheck goes through replay's wrapper).
//   - A tolerance check needs a Decoder; strings, bytes and padding are not
//     compared by it.
//   - Compare, a Comparer and the values they return are not safe for
//     concurrent use; a Check with its Decoder may be shared (decoders are
//     immutable).
package feedcheck
