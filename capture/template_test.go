package capture

import (
	"errors"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

func TestTemplateName(t *testing.T) {
	udp4 := buildFrame(frameSpec{vlans: []uint16{12}, src: ip4a, dst: ip4b, sport: 4000, dport: 30490})
	udp6 := buildFrame(frameSpec{src: ip6a, dst: ip6b, sport: 7, dport: 7400})
	arp := buildFrame(frameSpec{etherType: EtherTypeARP, payload: make([]byte, 28)})
	tcp := buildFrame(frameSpec{src: ip4a, dst: ip4b, proto: IPProtoTCP})
	f := func(tmpl string, frame []byte, want string, wantOK bool) {
		t.Helper()
		var p Packet
		if err := ParseFrame(frame, &p); err != nil {
			t.Fatal(err)
		}
		got, ok := MustTemplate(tmpl).AppendName([]byte("x:"), &p)
		if ok != wantOK || (ok && string(got) != "x:"+want) || (!ok && string(got) != "x:") {
			t.Errorf("%q: got %q, %v; want %q, %v", tmpl, got, ok, want, wantOK)
		}
	}
	f("udp/{dport}", udp4, "udp/30490", true)
	f("udp/{src}", udp4, "udp/10.1.2.3", true)
	f("udp/{src}:{sport}", udp4, "udp/10.1.2.3:4000", true)
	f("someip/{dport}", udp4, "someip/30490", true)
	f("eth/{ethertype}", udp4, "eth/0x0800", true)
	f("eth/{ethertype}", arp, "eth/0x0806", true)
	f("udp/{dst}:{dport}", udp4, "udp/239.1.2.3:30490", true)
	f("udp/{dst}:{dport}", udp6, "udp/ff02::1:3:7400", true)
	f("vlan{vlan}/{proto}", udp4, "vlan12/17", true)
	f("vlan{vlan}", udp6, "vlan0", true)
	f("lidar/front", arp, "lidar/front", true)
	f("udp/{dport}", arp, "", false)
	f("udp/{dport}", tcp, "", false)
	f("ip/{src}", arp, "", false)
	f("ip/{proto}", tcp, "ip/6", true)
}

func TestParseTemplateErrors(t *testing.T) {
	for _, s := range []string{"", "udp/{dport", "udp/dport}", "udp/{port}", "udp/{{dport}}", "a/{}"} {
		if _, err := ParseTemplate(s); !errors.Is(err, ErrTemplate) {
			t.Errorf("ParseTemplate(%q) = %v, want ErrTemplate", s, err)
		}
	}
}

func TestMapper(t *testing.T) {
	sink := newRecordingSink()
	sink.reject["udp/9"] = true
	m := newMapper(MustTemplate("udp/{dport}"), sink, ingest.TopicInfo{Source: "udp:test", Type: ingest.Raw("t")}, 3)
	look := func(dport uint16) (string, bool) {
		var p Packet
		if err := ParseFrame(buildFrame(frameSpec{src: ip4a, dst: ip4b, sport: 1, dport: dport}), &p); err != nil {
			t.Fatal(err)
		}
		id, ok := m.lookup(&p)
		if !ok {
			return "", false
		}
		return sink.names[id], true
	}
	f := func(dport uint16, want string, wantOK bool) {
		t.Helper()
		if got, ok := look(dport); got != want || ok != wantOK {
			t.Errorf("dport %d: got %q, %v; want %q, %v", dport, got, ok, want, wantOK)
		}
	}
	f(1, "udp/1", true)
	f(2, "udp/2", true)
	f(1, "udp/1", true)
	f(9, "", false) // refused by the sink, and not asked again
	f(9, "", false)
	f(3, "udp/3", true)
	f(4, "", false) // beyond MaxTopics
	f(2, "udp/2", true)
	if len(sink.infos) != 3 {
		t.Fatalf("Discover called for %d topics, want 3", len(sink.infos))
	}
	if got := sink.infos[0]; got.Source != "udp:test" || !got.Type.Equal(ingest.Raw("t")) {
		t.Errorf("TopicInfo = %+v, want Source and Type from the source", got)
	}
	m.offline()
	if len(sink.offline) != 3 {
		t.Errorf("offline for %v, want the 3 topics", sink.offline)
	}
}
