//go:build !race

package capture

import (
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

func TestParseFrameAllocs(t *testing.T) {
	frame := buildFrame(frameSpec{vlans: []uint16{5}, src: ip6a, dst: ip6b, sport: 1, dport: 2, payload: []byte("x")})
	var p Packet
	if n := testing.AllocsPerRun(100, func() { _ = ParseFrame(frame, &p) }); n != 0 {
		t.Fatalf("ParseFrame allocates %v times per frame", n)
	}
}

func TestMapperLookupAllocs(t *testing.T) {
	m := newMapper(MustTemplate("udp/{dst}:{dport}"), newRecordingSink(), ingest.TopicInfo{}, 0)
	var a, b Packet
	if err := ParseFrame(buildFrame(frameSpec{src: ip6a, dst: ip6b, sport: 1, dport: 2}), &a); err != nil {
		t.Fatal(err)
	}
	if err := ParseFrame(buildFrame(frameSpec{src: ip4a, dst: ip4b, sport: 1, dport: 3}), &b); err != nil {
		t.Fatal(err)
	}
	m.lookup(&a)
	m.lookup(&b)
	// Alternating keys miss the last-key cache and hit the map.
	if n := testing.AllocsPerRun(100, func() { m.lookup(&a); m.lookup(&b) }); n != 0 {
		t.Fatalf("mapper lookup allocates %v times per hit", n)
	}
}
