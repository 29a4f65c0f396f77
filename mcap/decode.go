package mcap

// dec reads fields from one record's content. A read past the end sets a
// sticky flag and returns zero values, so a parser checks once at the end
// (no error allocated per field).
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n uint64) []byte {
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *dec) u16() uint16 {
	if p := d.take(2); p != nil {
		return le.Uint16(p)
	}
	return 0
}

func (d *dec) u32() uint32 {
	if p := d.take(4); p != nil {
		return le.Uint32(p)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if p := d.take(8); p != nil {
		return le.Uint64(p)
	}
	return 0
}

// bytes32 reads a uint32 length-prefixed byte string (aliasing the input).
func (d *dec) bytes32() []byte { return d.take(uint64(d.u32())) }

// bytes64 reads a uint64 length-prefixed byte string (aliasing the input).
func (d *dec) bytes64() []byte { return d.take(d.u64()) }

func (d *dec) str() string { return string(d.bytes32()) }

// strMap reads a Map<string, string>. Memory is bounded by the input: every
// entry consumes at least 8 bytes of it.
func (d *dec) strMap() map[string]string {
	body := d.bytes32()
	if d.bad {
		return nil
	}
	m := map[string]string{}
	in := dec{b: body}
	for len(in.b) > 0 && !in.bad {
		k := in.str()
		v := in.str()
		if !in.bad {
			m[k] = v
		}
	}
	d.bad = in.bad
	return m
}

// u16u64Map reads a Map<uint16, uint64> calling fn per entry.
func (d *dec) u16u64Map(fn func(k uint16, v uint64)) {
	body := d.bytes32()
	if d.bad {
		return
	}
	if len(body)%10 != 0 {
		d.bad = true
		return
	}
	for i := 0; i < len(body); i += 10 {
		fn(le.Uint16(body[i:]), le.Uint64(body[i+2:]))
	}
}

// record is one raw record: its opcode, content and file offset.
type record struct {
	op   Opcode
	body []byte
	at   int64 // offset of the opcode byte from the start of the file (or chunk records)
}

// recIter walks a sequence of records in b; base is b[0]'s offset.
type recIter struct {
	b    []byte
	off  int
	base int64
}

// next returns the following record; ok is false at the end of b. A record
// running past the end of b is reported with trunc set.
func (it *recIter) next() (r record, ok, trunc bool) {
	rest := it.b[it.off:]
	if len(rest) == 0 {
		return r, false, false
	}
	if len(rest) < recordPrefixLen {
		return record{at: it.base + int64(it.off)}, false, true
	}
	n := le.Uint64(rest[1:])
	if n > uint64(len(rest)-recordPrefixLen) {
		return record{op: Opcode(rest[0]), at: it.base + int64(it.off)}, false, true
	}
	r = record{op: Opcode(rest[0]), body: rest[recordPrefixLen : recordPrefixLen+int(n) : recordPrefixLen+int(n)], at: it.base + int64(it.off)}
	it.off += recordPrefixLen + int(n)
	return r, true, false
}
