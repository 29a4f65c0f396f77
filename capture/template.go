package capture

import (
	"fmt"
	"strconv"
	"strings"
)

// field is one placeholder a Template may use.
type field uint8

const (
	fieldNone field = iota
	fieldSrc
	fieldDst
	fieldSPort
	fieldDPort
	fieldEtherType
	fieldVLAN
	fieldProto
)

var fieldNames = map[string]field{
	"src":       fieldSrc,
	"dst":       fieldDst,
	"sport":     fieldSPort,
	"dport":     fieldDPort,
	"ethertype": fieldEtherType,
	"vlan":      fieldVLAN,
	"proto":     fieldProto,
}

// Template maps a packet to a topic name. It is text with placeholders in
// braces:
//
//	{src} {dst}     source / destination IP address (10.0.0.1, fd00::1)
//	{sport} {dport} UDP source / destination port, decimal
//	{ethertype}     EtherType after VLAN tags, 0x%04x (eth/0x0800)
//	{vlan}          VLAN id, decimal, 0 when untagged
//	{proto}         IP protocol number, decimal
//
// A template without placeholders is a fixed name: every packet goes to one
// topic. Examples: "udp/{dport}", "udp/{src}:{sport}", "someip/{dport}",
// "eth/{ethertype}", "udp/{dst}:{dport}", "lidar/front".
//
// A packet lacking a field the template uses (a non-UDP packet for
// {dport}, a non-IP frame for {src}) maps to no topic. A Template is
// immutable and safe for concurrent use.
type Template struct {
	text  string
	parts []part
	uses  uint16 // bit set of fields
}

type part struct {
	lit string
	f   field
}

// ParseTemplate parses a topic template. It fails on an empty template, an
// unknown placeholder, or an unbalanced brace.
func ParseTemplate(s string) (Template, error) {
	t := Template{text: s}
	if s == "" {
		return Template{}, fmt.Errorf("%w: empty", ErrTemplate)
	}
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, part{lit: rest})
			break
		}
		if rest[i] == '}' {
			return Template{}, fmt.Errorf("%w: %q: '}' without '{' at offset %d", ErrTemplate, s, len(s)-len(rest)+i)
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		j := strings.IndexAny(rest[i+1:], "{}")
		if j < 0 || rest[i+1+j] != '}' {
			return Template{}, fmt.Errorf("%w: %q: unclosed '{' at offset %d", ErrTemplate, s, len(s)-len(rest)+i)
		}
		name := rest[i+1 : i+1+j]
		f, ok := fieldNames[name]
		if !ok {
			return Template{}, fmt.Errorf("%w: %q: unknown placeholder {%s} (want src, dst, sport, dport, ethertype, vlan or proto)", ErrTemplate, s, name)
		}
		t.parts = append(t.parts, part{f: f})
		t.uses |= 1 << f
		rest = rest[i+2+j:]
	}
	return t, nil
}

// MustTemplate is ParseTemplate for templates fixed in the program; it
// panics on error.
func MustTemplate(s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return t
}

// String returns the template text.
func (t Template) String() string { return t.text }

// Fixed reports whether the template has no placeholders.
func (t Template) Fixed() bool { return t.uses == 0 }

func (t Template) has(f field) bool { return t.uses&(1<<f) != 0 }

// Matches reports whether p has every field the template uses.
func (t Template) Matches(p *Packet) bool {
	if (t.has(fieldSrc) || t.has(fieldDst) || t.has(fieldProto)) && p.IPVersion == 0 {
		return false
	}
	if (t.has(fieldSPort) || t.has(fieldDPort)) && !p.HasUDP {
		return false
	}
	return true
}

// AppendName appends the topic name for p to dst. ok is false (and dst is
// returned unchanged) when p lacks a field the template uses.
func (t Template) AppendName(dst []byte, p *Packet) (_ []byte, ok bool) {
	if !t.Matches(p) {
		return dst, false
	}
	for _, pt := range t.parts {
		switch pt.f {
		case fieldNone:
			dst = append(dst, pt.lit...)
		case fieldSrc:
			dst = p.Src.AppendTo(dst)
		case fieldDst:
			dst = p.Dst.AppendTo(dst)
		case fieldSPort:
			dst = strconv.AppendUint(dst, uint64(p.SrcPort), 10)
		case fieldDPort:
			dst = strconv.AppendUint(dst, uint64(p.DstPort), 10)
		case fieldEtherType:
			const hex = "0123456789abcdef"
			e := p.EtherType
			dst = append(dst, '0', 'x', hex[e>>12], hex[e>>8&15], hex[e>>4&15], hex[e&15])
		case fieldVLAN:
			v := uint64(0)
			if p.HasVLAN {
				v = uint64(p.VLAN)
			}
			dst = strconv.AppendUint(dst, v, 10)
		case fieldProto:
			dst = strconv.AppendUint(dst, uint64(p.IPProto), 10)
		}
	}
	return dst, true
}

// topicKey holds the packet fields a template uses; fields it does not use
// are zero, so packets that name the same topic have equal keys. It holds no
// strings, so a map lookup with it does not allocate.
type topicKey struct {
	src, dst                     [16]byte
	sport, dport, ethertype, vid uint16
	proto, ipv                   uint8
}

// key returns the lookup key of p, which must match t.
func (t Template) key(p *Packet) topicKey {
	var k topicKey
	if t.uses == 0 {
		return k
	}
	if t.has(fieldSrc) || t.has(fieldDst) {
		k.ipv = p.IPVersion // ::ffff:1.2.3.4 and 1.2.3.4 are two names
	}
	if t.has(fieldSrc) {
		k.src = p.Src.As16()
	}
	if t.has(fieldDst) {
		k.dst = p.Dst.As16()
	}
	if t.has(fieldSPort) {
		k.sport = p.SrcPort
	}
	if t.has(fieldDPort) {
		k.dport = p.DstPort
	}
	if t.has(fieldEtherType) {
		k.ethertype = p.EtherType
	}
	if t.has(fieldVLAN) && p.HasVLAN {
		k.vid = p.VLAN
	}
	if t.has(fieldProto) {
		k.proto = p.IPProto
	}
	return k
}
