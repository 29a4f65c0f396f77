package report

import "unsafe"

// topicCache maps a message's name and channel to its topic id without
// hashing the strings: pack frames intern names, so a topic's strings
// keep their address from message to message, and a small direct-mapped
// table keyed by the addresses answers almost every lookup. A miss (a new
// address) falls back to the map.
type topicCache struct {
	slots [256]topicSlot
	ids   map[topicKey]int
}

type topicSlot struct {
	name, channel unsafe.Pointer
	nlen, clen    int
	id            int
	used          bool
}

func (c *topicCache) lookup(name, channel string) (int, bool) {
	np, cp := unsafe.Pointer(unsafe.StringData(name)), unsafe.Pointer(unsafe.StringData(channel))
	h := (uintptr(np)>>3 ^ uintptr(np)>>11 ^ uintptr(cp)>>5) & uintptr(len(c.slots)-1)
	sl := &c.slots[h]
	if sl.used && sl.name == np && sl.channel == cp && sl.nlen == len(name) && sl.clen == len(channel) {
		return sl.id, true
	}
	id, ok := c.ids[topicKey{name, channel}]
	if ok && np != nil {
		*sl = topicSlot{name: np, channel: cp, nlen: len(name), clen: len(channel), id: id, used: true}
	}
	return id, ok
}
