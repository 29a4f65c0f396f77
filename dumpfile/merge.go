package dumpfile

import (
	"errors"

	"github.com/edr-lite/edr-lite/pack"
)

// MergeReport says what Merge wrote.
type MergeReport struct {
	Inputs   int
	Messages uint64
	Bytes    uint64
	Triggers int
}

// Merge writes the messages of the dumps ins (pack or MCAP, in any mix) to
// a new pack file out in message time order (capture time; ties keep input
// order, then each input's order; see Messages), each topic with its types
// (type sections where a message's type differs from its topic's last). The dump information of
// the inputs is combined: every trigger is kept, per-topic accounting is
// summed (a topic spelled "name" by one input and "name#" by another is one
// topic, written "name#"), the window is the union. opts give the output's
// compression and writer. progress, when not nil, is called with the
// number of messages written so far every 4096 messages. It is Rewrite
// without a selection.
func Merge(ins []string, out string, opts pack.WriterOptions, progress func(done uint64)) (*MergeReport, error) {
	if len(ins) == 0 {
		return nil, errors.New("dumpfile: merge needs at least one input")
	}
	srcs, err := OpenAll(ins)
	if err != nil {
		return nil, err
	}
	defer CloseAll(srcs)
	if opts.Writer == "" {
		opts.Writer = "edr-lite merge"
	}
	rep, err := Rewrite(srcs, Output{Path: out}, RewriteOptions{Format: FormatPack,
		Compression: opts.Compression.String(), Writer: opts.Writer, Progress: progress})
	if err != nil {
		return nil, err
	}
	return &MergeReport{Inputs: rep.Inputs, Messages: rep.Messages, Bytes: rep.Bytes, Triggers: rep.Parts[0].Triggers}, nil
}

// OpenAll opens every path (Open); on error the ones opened are closed.
func OpenAll(paths []string) ([]*Source, error) {
	var srcs []*Source
	for _, p := range paths {
		s, err := Open(p)
		if err != nil {
			CloseAll(srcs)
			return nil, err
		}
		srcs = append(srcs, s)
	}
	return srcs, nil
}

// CloseAll closes every Source.
func CloseAll(srcs []*Source) {
	for _, s := range srcs {
		s.Close()
	}
}
