package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/edr-lite/edr-lite/capture"
)

var captureTemplates = []capture.Template{
	capture.MustTemplate("udp/{dport}"),
	capture.MustTemplate("udp/{src}:{sport}"),
	capture.MustTemplate("someip/{dport}"),
	capture.MustTemplate("eth/{ethertype}/vlan{vlan}"),
	capture.MustTemplate("udp/{dst}:{dport}"),
	capture.MustTemplate("ip/{proto}"),
	capture.MustTemplate("fixed/name"),
}

// FuzzCaptureFrame feeds arbitrary bytes as a captured Ethernet frame (and
// as a layer-3 packet) through header parsing and topic mapping. Properties:
// no panic; an error wraps ErrTruncated or ErrMalformed and leaves no
// partial result; the UDP payload lies inside the frame; every template
// either names the packet without leftover placeholders or declines it.
func FuzzCaptureFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x81, 0x00}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p capture.Packet
		check := func(what string, err error) {
			if err != nil {
				if !errors.Is(err, capture.ErrTruncated) && !errors.Is(err, capture.ErrMalformed) {
					t.Fatalf("%s: error %v wraps neither ErrTruncated nor ErrMalformed", what, err)
				}
				if p.Frame != nil || p.Payload != nil || p.HasUDP || p.IPVersion != 0 || p.EtherType != 0 {
					t.Fatalf("%s: partial result after error: %+v", what, p)
				}
				return
			}
			if len(p.Payload) > len(data) {
				t.Fatalf("%s: payload of %d bytes from %d input bytes", what, len(p.Payload), len(data))
			}
			if p.HasUDP && !bytes.Contains(data, p.Payload) {
				t.Fatalf("%s: payload is not part of the input", what)
			}
			if p.HasUDP && p.IPVersion == 0 {
				t.Fatalf("%s: UDP without IP", what)
			}
			for _, tm := range captureTemplates {
				name, ok := tm.AppendName(nil, &p)
				if ok != tm.Matches(&p) {
					t.Fatalf("%s: %v: AppendName ok=%v, Matches=%v", what, tm, ok, tm.Matches(&p))
				}
				if ok && (len(name) == 0 || bytes.ContainsAny(name, "{}")) {
					t.Fatalf("%s: %v: bad name %q", what, tm, name)
				}
			}
		}
		check("ParseFrame", capture.ParseFrame(data, &p))
		check("ParseIP", capture.ParseIP(data, &p))
	})
}
