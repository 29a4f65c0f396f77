//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"fmt"
	"io"
	"math"
	"path"
	"runtime/debug"
	"sort"
	"strings"
	"unsafe"

	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// plan is which frames of a pack file can yield a message under a filter,
// from one walk over their metas (no data touched) by a second reader over
// the same bytes, so that the reads' own damage counts stay theirs.
type plan struct {
	offs     []int64 // the frames the walk read, in file order
	pass     []bool  // the frame holds a message the filter selects
	dmg      []bool  // damage lies before the frame (the walk skipped it): the reads go through it
	complete bool    // the walk reached the end; else frames after the last are read as they come
}

// newPlan walks r's frames for its window.
func newPlan(r *reader) (*plan, error) {
	pr, err := pack.NewBytesReader(r.name, r.bytes, pack.ReaderOptions{SkipDamaged: r.skip})
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	p := &plan{}
	var f pack.Frame
	regions := 0
	for {
		err := pr.ReadMetaInto(&f)
		if err == io.EOF {
			p.complete = true
			break
		}
		if err != nil {
			break // damage a strict read stops at: it reads on from the frame before
		}
		pass := false
		for i := range f.Len() {
			m := f.Message(i)
			s := r.tt.slot(m.Name, m.Channel)
			if t := pack.MessageTime(&m, f.Time()); s.sel && t >= r.win.lo && t <= r.win.hi {
				pass = true
				break
			}
		}
		sk := pr.Skipped()
		p.offs, p.pass, p.dmg = append(p.offs, pr.FrameOffset()), append(p.pass, pass), append(p.dmg, sk.Regions > regions)
		regions = sk.Regions
	}
	return p, nil
}

// skip moves pr past the frames that cannot yield a message: to the next
// one that can, io.EOF when none is left. It never moves past damage (the
// reads meet it, and report or count it).
func (p *plan) skip(pr *pack.Reader) error {
	pos := pr.Tell()
	j := sort.Search(len(p.offs), func(i int) bool { return p.offs[i] >= pos })
	k := j
	for k < len(p.offs) && !p.pass[k] && !p.dmg[k] {
		k++
	}
	to := k
	switch {
	case k == len(p.offs) && p.complete:
		return io.EOF
	case k == len(p.offs), p.dmg[k]:
		to = k - 1 // read the frame before the damage (or the unknown), then on through it
	}
	if to < j || p.offs[to] == pos {
		return nil
	}
	return pr.SeekFrame(p.offs[to])
}

// cstrings reads n C strings (NULL with n == 0: none).
func cstrings(list **C.char, n C.size_t) ([]string, bool) {
	if n == 0 {
		return nil, true
	}
	if list == nil {
		return nil, false
	}
	var out []string
	for _, p := range unsafe.Slice(list, int(n)) {
		if p == nil {
			return nil, false
		}
		out = append(out, C.GoString(p))
	}
	return out, true
}

//export edrgo_pack_set_filter
func edrgo_pack_set_filter(h C.uint64_t, f *C.edr_filter) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	r := o.r
	var sel filter.Topics
	w := window{lo: math.MinInt64, hi: math.MaxInt64}
	if f != nil {
		var ok1, ok2 bool
		sel.Include, ok1 = cstrings((**C.char)(unsafe.Pointer(f.topics)), f.n_topics)
		sel.Exclude, ok2 = cstrings((**C.char)(unsafe.Pointer(f.exclude)), f.n_exclude)
		if !ok1 || !ok2 {
			return o.failf(C.EDR_EINVAL, "edr_pack_set_filter: a NULL topic list or glob")
		}
		for _, g := range append(sel.Include[:len(sel.Include):len(sel.Include)], sel.Exclude...) {
			if _, err := path.Match(g, ""); err != nil {
				return o.failf(C.EDR_EINVAL, "edr_pack_set_filter: topic glob %q: %v", g, err)
			}
		}
		if f.flags&^(C.EDR_FILTER_START|C.EDR_FILTER_END) != 0 || f.reserved != 0 {
			return o.failf(C.EDR_EINVAL, "edr_pack_set_filter: flags %#x (want EDR_FILTER_START, EDR_FILTER_END or both), reserved %d (want 0)", int(f.flags), int(f.reserved))
		}
		if f.flags&C.EDR_FILTER_START != 0 {
			w.lo = int64(f.start_ns)
		}
		if f.flags&C.EDR_FILTER_END != 0 {
			w.hi = int64(f.end_ns)
		}
		if w.lo > w.hi {
			return o.failf(C.EDR_EINVAL, "edr_pack_set_filter: start %s (%d) is after end %s (%d)", filter.FormatTime(w.lo), w.lo, filter.FormatTime(w.hi), w.hi)
		}
		if r.src != nil && !sel.All() {
			if err := r.selectsSome(sel); err != nil {
				return o.setErr(C.EDR_ENOMATCH, err.Error(), -1)
			}
		}
		w.on, w.from = true, w.lo
	}
	r.tt.selectTopics(sel)
	r.win = w
	r.pend, r.m.n, r.m.valid = -1, 0, false
	if w.on && r.pr != nil && (!sel.All() || w.hi != math.MaxInt64) {
		p, err := newPlan(r)
		if err != nil {
			return o.fail(err)
		}
		r.win.plan = p
	}
	return r.moveTo(o, w.lo)
}

// selectsSome reports, for a file, whether sel selects one of its topics;
// the error names the globs and what the file holds.
func (r *reader) selectsSome(sel filter.Topics) error {
	var held []string
	for _, t := range r.src.Topics() {
		if sel.MatchName(t.Name, t.Channel) {
			return nil
		}
		held = append(held, mcap.TopicName(t.Name, t.Channel))
	}
	sort.Strings(held)
	if len(held) > 12 {
		held = append(held[:12], fmt.Sprintf("and %d more", len(held)-12))
	}
	what := "topics " + strings.Join(sel.Include, ", ")
	if len(sel.Include) == 0 {
		what = "every topic"
	}
	if len(sel.Exclude) > 0 {
		what += " less " + strings.Join(sel.Exclude, ", ")
	}
	if len(held) == 0 {
		held = []string{"no topic"}
	}
	return fmt.Errorf("%s: the filter (%s) selects no topic of the file; it holds %s", r.name, what, strings.Join(held, ", "))
}

// moveTo moves to the first message at or after ns (math.MinInt64: the
// start) within the window; a stream stays where it is.
func (r *reader) moveTo(o *object, ns int64) C.int {
	r.win.done = false
	switch {
	case r.mp != nil:
		r.mp.SeekTime(ns)
	case r.pr != nil && ns == math.MinInt64:
		r.pr.Rewind()
	case r.pr != nil:
		if err := r.pr.SeekTime(ns); err != nil {
			return o.fail(err)
		}
	}
	return C.EDR_OK
}

//export edrgo_pack_read_records
func edrgo_pack_read_records(h C.uint64_t, buf unsafe.Pointer, size, capn C.size_t, times *C.int64_t, n *C.size_t) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	if n == nil || size == 0 || (buf == nil && capn > 0) || uint64(capn) > uint64(math.MaxInt)/uint64(size) {
		return o.failf(C.EDR_EINVAL, "edr_pack_read_records: NULL n or buf, a record size of 0, or a buffer past the address space")
	}
	*n = 0
	r := o.r
	rec := int(size)
	var dst []byte
	var ts []C.int64_t
	if capn > 0 {
		dst = unsafe.Slice((*byte)(buf), rec*int(capn))
		if times != nil {
			ts = unsafe.Slice(times, int(capn))
		}
	}
	k := 0
	for k < int(capn) {
		if r.pend < 0 || r.pend >= r.f.Len() {
			r.m.n, r.m.valid = 0, false // the view no longer describes the frame
			err := r.read(true)
			if err == io.EOF {
				*n = C.size_t(k)
				return C.EDR_EOF
			}
			if err != nil {
				*n = C.size_t(k)
				return o.fail(err)
			}
			r.pend = 0
		}
		i := r.pend
		r.pend++
		m := r.f.Message(i)
		_, t, ok := r.keep(&m, r.f.Time())
		if !ok {
			continue
		}
		d := r.f.Data(i)
		if len(d) < rec {
			*n = C.size_t(k)
			return o.failf(C.EDR_EINVAL, "%s: the message of %s at %s (%d) has %d bytes, less than a record of %d",
				r.name, mcap.TopicName(m.Name, m.Channel), filter.FormatTime(t), t, len(d), rec)
		}
		copy(dst[k*rec:], d[:rec])
		if ts != nil {
			ts[k] = C.int64_t(t)
		}
		k++
	}
	*n = C.size_t(k)
	return C.EDR_OK
}
