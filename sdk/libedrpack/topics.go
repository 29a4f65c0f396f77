//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"sort"
	"unsafe"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// topicSlot is one topic a reader has met: its name and channel as C
// strings, handed out in every view (a message's name costs nothing to
// present), whether the filter selects it, and the types it has.
type topicSlot struct {
	name, channel string
	cname, cchan  *C.char
	sel           bool // the filter's topics select it

	// A pack file: the topic's type sections (offsets in file order, each
	// with its C type) and the type before the first (raw, named by the
	// accounting).
	secOffs  []int64
	secTypes []*C.edr_type
	fallback *C.edr_type
	atOff    int64 // the frame offset cur was looked up for (-1: none)
	// cur is the type of the topic's messages at atOff (files) or from
	// now on (streams: the last type section read).
	cur *C.edr_type
}

// topicKey names a topic.
type topicKey struct{ name, channel string }

// cacheEntry remembers which slot a name and a channel went to, by the
// addresses of their bytes: a pack.Frame interns its names (the same
// string for every message of a topic), so comparing two pointers and two
// lengths finds the slot without hashing the strings.
type cacheEntry struct {
	np, cp unsafe.Pointer
	nl, cl int
	s      *topicSlot
}

// topicTable is a reader's topics and the C types its views point at: C
// memory made once per topic and per distinct type, freed at close.
type topicTable struct {
	byKey  map[topicKey]*topicSlot
	cache  [64]cacheEntry
	ctypes map[ingest.ContentID]*C.edr_type
	byPtr  map[*ingest.Type]*C.edr_type
	allocs []unsafe.Pointer
	raw    *C.edr_type // x-edr-raw without a name

	sel    filter.Topics // the filter's topics (All: none given)
	accts  map[string]string
	stream bool // types arrive with the records (a stream)
}

func newTopicTable() *topicTable {
	return &topicTable{byKey: map[topicKey]*topicSlot{}, ctypes: map[ingest.ContentID]*C.edr_type{}, byPtr: map[*ingest.Type]*C.edr_type{}}
}

func (t *topicTable) free() {
	for _, p := range t.allocs {
		C.free(p)
	}
	*t = topicTable{}
}

func (t *topicTable) cstring(s string) *C.char {
	p := C.CString(s)
	t.allocs = append(t.allocs, unsafe.Pointer(p))
	return p
}

// ctype returns typ in C memory: one allocation per distinct type (its
// strings and schema bytes inside it).
func (t *topicTable) ctype(typ *ingest.Type) *C.edr_type {
	if p := t.byPtr[typ]; p != nil {
		return p
	}
	id := typ.ID()
	if p := t.ctypes[id]; p != nil {
		t.byPtr[typ] = p
		return p
	}
	head := int(unsafe.Sizeof(C.edr_type{}))
	size := head + packSize(len(typ.Schema.Data), typ.MessageEncoding, typ.Schema.Name, typ.Schema.Encoding)
	mem := C.malloc(C.size_t(size))
	if mem == nil {
		panic("libedrpack: out of memory")
	}
	t.allocs = append(t.allocs, mem)
	c := newCPack(mem, size, head)
	ct := (*C.edr_type)(mem)
	*ct = C.edr_type{message_encoding: c.str(typ.MessageEncoding), schema_name: c.str(typ.Schema.Name), schema_encoding: c.str(typ.Schema.Encoding),
		schema_data: c.bytes(typ.Schema.Data, true), schema_len: C.size_t(len(typ.Schema.Data))}
	t.ctypes[id], t.byPtr[typ] = ct, ct
	return ct
}

// rawType is x-edr-raw named name (the accounting's), in C memory.
func (t *topicTable) rawType(name string) *C.edr_type {
	if name == "" && t.raw != nil {
		return t.raw
	}
	typ := ingest.Raw(name)
	ct := t.ctype(&typ)
	delete(t.byPtr, &typ) // a stack address: never looked up again
	if name == "" {
		t.raw = ct
	}
	return ct
}

// slot returns the slot of topic name#channel, made when first met.
func (t *topicTable) slot(name, channel string) *topicSlot {
	np, cp := unsafe.Pointer(unsafe.StringData(name)), unsafe.Pointer(unsafe.StringData(channel))
	// Short names sit next to each other (the allocator packs them): mix
	// every bit of both addresses into the 6 bits of the index.
	e := &t.cache[(uint64(uintptr(np))*0x9e3779b97f4a7c15^uint64(uintptr(cp))*0xc2b2ae3d27d4eb4f)>>58]
	if e.s != nil && e.np == np && e.cp == cp && e.nl == len(name) && e.cl == len(channel) {
		return e.s
	}
	s := t.byKey[topicKey{name, channel}]
	if s == nil {
		s = t.newSlot(name, channel)
	}
	// np and cp are pointers the GC traces: while the entry holds them,
	// no other bytes can live at those addresses, and Go strings do not
	// change, so equal addresses and lengths are equal names.
	*e = cacheEntry{np: np, cp: cp, nl: len(name), cl: len(channel), s: s}
	return s
}

func (t *topicTable) newSlot(name, channel string) *topicSlot {
	s := &topicSlot{name: name, channel: channel, cname: t.cstring(name), cchan: t.cstring(channel), atOff: -1}
	s.sel = t.sel.MatchName(name, channel)
	s.fallback = t.rawType(t.accountName(name, channel))
	s.cur = s.fallback
	t.byKey[topicKey{name, channel}] = s
	return s
}

// accountName is the type name the dump's accounting gives a topic (its
// raw bytes' name), "" when none.
func (t *topicTable) accountName(name, channel string) string {
	if n := t.accts[pack.Topic(name, channel)]; n != "" {
		return n
	}
	return t.accts[mcap.TopicName(name, channel)]
}

// addSection records a pack type section (file readers: all of them at
// open, in file order; streams: as they are read).
func (t *topicTable) addSection(tt *pack.TopicType) {
	s := t.byKey[topicKey{tt.Name, tt.Channel}]
	if s == nil {
		s = t.newSlot(tt.Name, tt.Channel)
	}
	ct := t.ctype(&tt.Type)
	if t.stream {
		s.cur = ct
		return
	}
	s.secOffs = append(s.secOffs, tt.Offset)
	s.secTypes = append(s.secTypes, ct)
}

// typeAt returns the type of s's messages in the pack frame at offset off
// (file readers) or now (streams).
func (s *topicSlot) typeAt(off int64) *C.edr_type {
	if off == s.atOff || len(s.secOffs) == 0 {
		return s.cur
	}
	i := sort.Search(len(s.secOffs), func(i int) bool { return s.secOffs[i] >= off })
	s.cur, s.atOff = s.fallback, off
	if i > 0 {
		s.cur = s.secTypes[i-1]
	}
	return s.cur
}

// select sets the filter's topics and marks every slot.
func (t *topicTable) selectTopics(sel filter.Topics) {
	t.sel = sel
	for _, s := range t.byKey {
		s.sel = sel.MatchName(s.name, s.channel)
	}
}
