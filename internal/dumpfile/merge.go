package dumpfile

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"sort"

	"edr-lite/pack"
)

// MergeReport says what Merge wrote.
type MergeReport struct {
	Inputs   int
	Messages uint64
	Bytes    uint64
	Triggers int
}

// Merge writes the messages of the pack files ins to a new pack file out in
// message time order (capture time; ties keep input order, then file order).
// The dump information of the inputs is combined: every trigger is kept,
// per-topic accounting is summed, the window is the union. opts configure
// the output (compression, frame size). progress, when not nil, is called
// with the number of messages written so far every 4096 messages.
func Merge(ins []string, out string, opts pack.WriterOptions, progress func(done uint64)) (*MergeReport, error) {
	if len(ins) == 0 {
		return nil, errors.New("dumpfile: merge needs at least one input")
	}
	var its mergeHeap
	defer func() {
		for _, it := range its {
			it.r.Close()
		}
	}()
	var info pack.DumpInfo
	accounts := map[string]*pack.TopicAccount{}
	var order []string
	for i, p := range ins {
		if f, err := Detect(p); err != nil {
			return nil, err
		} else if f != FormatPack {
			return nil, fmt.Errorf("%s: merge reads pack files only (got %s)", p, f)
		}
		r, err := pack.Open(p)
		if err != nil {
			return nil, err
		}
		it := &msgIter{r: r, src: i}
		its = append(its, it)
		if d, ok := r.DumpInfo(); ok {
			info.Triggers = append(info.Triggers, d.Triggers...)
			if d.StartNs != 0 && (info.StartNs == 0 || d.StartNs < info.StartNs) {
				info.StartNs = d.StartNs
			}
			if d.EndNs > info.EndNs {
				info.EndNs = d.EndNs
			}
			for _, a := range d.Topics {
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
				if a.FirstNs != 0 && (acc.FirstNs == 0 || a.FirstNs < acc.FirstNs) {
					acc.FirstNs = a.FirstNs
				}
				if a.LastNs > acc.LastNs {
					acc.LastNs = a.LastNs
				}
			}
		}
	}
	h := its[:0:0]
	for _, it := range its {
		ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if ok {
			h = append(h, it)
		}
	}
	heap.Init(&h)
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
	for h.Len() > 0 {
		it := h[0]
		m := it.f.Message(it.i)
		data := it.f.Data(it.i)
		if err := w.Add(m.Name, m.Channel, m.Meta, m.GenTs, MessageTime(&m, it.f.Time()), data); err != nil {
			return fail(fmt.Errorf("%s: %w", out, err))
		}
		rep.Messages++
		rep.Bytes += uint64(len(data))
		if progress != nil && rep.Messages%4096 == 0 {
			progress(rep.Messages)
		}
		ok, err := it.next()
		if err != nil {
			return fail(err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
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

// msgIter walks one reader message by message.
type msgIter struct {
	r   *pack.Reader
	src int
	f   pack.Frame
	i   int
	n   uint64 // messages returned so far, for stable ties
	ts  int64
}

func (it *msgIter) next() (bool, error) {
	it.i++
	for it.i >= it.f.Len() {
		if err := it.r.ReadInto(&it.f); err != nil {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		it.i = 0
	}
	m := it.f.Message(it.i)
	it.ts = MessageTime(&m, it.f.Time())
	it.n++
	return true, nil
}

type mergeHeap []*msgIter

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.src != b.src {
		return a.src < b.src
	}
	return a.n < b.n
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*msgIter)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
