package dumpfile

import (
	"errors"
	"fmt"
	"sort"

	"github.com/edr-lite/edr-lite/ingest"

	"github.com/edr-lite/edr-lite/dumpinfo"
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
// topic, written "name#"), the window is the union. opts configure the output (compression,
// frame size). progress, when not nil, is called with the number of
// messages written so far every 4096 messages.
func Merge(ins []string, out string, opts pack.WriterOptions, progress func(done uint64)) (*MergeReport, error) {
	if len(ins) == 0 {
		return nil, errors.New("dumpfile: merge needs at least one input")
	}
	var sources []*Source
	defer func() {
		for _, s := range sources {
			s.Close()
		}
	}()
	var info dumpinfo.Info
	accounts := map[string]*dumpinfo.TopicAccount{}
	var order []string
	for _, p := range ins {
		r, err := Open(p)
		if err != nil {
			return nil, err
		}
		sources = append(sources, r)
		if d, ok := r.DumpInfo(); ok {
			info.Triggers = append(info.Triggers, d.Triggers...)
			if d.StartNs != 0 && (info.StartNs == 0 || d.StartNs < info.StartNs) {
				info.StartNs = d.StartNs
			}
			if d.EndNs > info.EndNs {
				info.EndNs = d.EndNs
			}
			for _, a := range d.Topics {
				// one key however the input spells the topic ("name" or
				// "name#" for no channel): the pack form
				a.Topic = pack.Topic(pack.SplitTopic(a.Topic))
				acc, ok := accounts[a.Topic]
				if !ok {
					c := a
					accounts[a.Topic] = &c
					order = append(order, a.Topic)
					continue
				}
				acc.Messages += a.Messages
				acc.Bytes += a.Bytes
				acc.Overwritten += a.Overwritten
				acc.Oversize += a.Oversize
				acc.SkippedBusy += a.SkippedBusy
				acc.LostAtSource += a.LostAtSource
				if a.FirstNs != 0 && (acc.FirstNs == 0 || a.FirstNs < acc.FirstNs) {
					acc.FirstNs = a.FirstNs
				}
				if a.LastNs > acc.LastNs {
					acc.LastNs = a.LastNs
				}
			}
		}
	}
	msgs := NewMessages(sources...)
	if opts.Writer == "" {
		opts.Writer = "edr-lite merge"
	}
	w, err := pack.Create(out, opts)
	if err != nil {
		return nil, err
	}
	rep := &MergeReport{Inputs: len(ins)}
	fail := func(err error) (*MergeReport, error) {
		w.Close()
		return nil, err
	}
	// Each topic's type as written so far: a message whose type differs
	// (another input, or a change inside one) gets a type section first.
	type typed struct {
		ptr *ingest.Type
		typ ingest.Type
	}
	types := map[topicKey]*typed{}
	for {
		ok, err := msgs.Next()
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		m := msgs.Message()
		k := topicKey{m.Name, m.Channel}
		cur := types[k]
		if cur == nil {
			cur = &typed{}
			types[k] = cur
		}
		if m.Type != cur.ptr {
			cur.ptr = m.Type
			if !cur.typ.Equal(*m.Type) || cur.typ.MessageEncoding == "" {
				cur.typ = *m.Type
				if err := w.SetTopicType(m.Name, m.Channel, *m.Type, m.TimeNs); err != nil {
					return fail(fmt.Errorf("%s: %w", out, err))
				}
			}
		}
		if err := w.Add(m.Name, m.Channel, m.Meta, m.GenNs, m.TimeNs, m.Data); err != nil {
			return fail(fmt.Errorf("%s: %w", out, err))
		}
		rep.Messages++
		rep.Bytes += uint64(len(m.Data))
		if progress != nil && rep.Messages%4096 == 0 {
			progress(rep.Messages)
		}
	}
	sort.Strings(order)
	for _, t := range order {
		info.Topics = append(info.Topics, *accounts[t])
	}
	rep.Triggers = len(info.Triggers)
	if len(info.Triggers) > 0 || len(info.Topics) > 0 {
		info.Writer = opts.Writer
		if err := w.SetDumpInfo(info); err != nil {
			return fail(err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if progress != nil {
		progress(rep.Messages)
	}
	return rep, nil
}
