package capture

import (
	"errors"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProbeUDP: the probe meets what NewUDP would meet, and holds nothing
// after: a port in use is EADDRINUSE, an address of no interface of this
// host EADDRNOTAVAIL, a free one nil and free again after.
func TestProbeUDP(t *testing.T) {
	held, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := ProbeUDP(UDPOptions{Addr: held.LocalAddr().String()}); !errors.Is(err, unix.EADDRINUSE) {
		t.Errorf("a port in use: %v, want EADDRINUSE", err)
	}
	if err := ProbeUDP(UDPOptions{Addr: "192.0.2.77:5000"}); !errors.Is(err, unix.EADDRNOTAVAIL) {
		t.Errorf("an address of no interface here: %v, want EADDRNOTAVAIL", err)
	}
	free := held.LocalAddr().(*net.UDPAddr)
	held.Close()
	if err := ProbeUDP(UDPOptions{Addr: free.String()}); err != nil {
		t.Fatalf("a free port: %v", err)
	}
	again, err := net.ListenPacket("udp4", free.String())
	if err != nil {
		t.Fatalf("the probe kept the port: %v", err)
	}
	again.Close()
}

// TestProbeRaw: an interface that does not exist is named; with
// CAP_NET_RAW the loopback interface passes (with a filter too).
func TestProbeRaw(t *testing.T) {
	if err := ProbeRaw(RawOptions{Interface: "nosuch0"}); err == nil {
		t.Error("an interface that does not exist passed the probe")
	}
	err := ProbeRaw(RawOptions{Interface: "lo"})
	if errors.Is(err, unix.EPERM) {
		t.Skipf("needs CAP_NET_RAW: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = ProbeRaw(RawOptions{Interface: "lo", Filter: &Filter{IPProto: 17}})
	switch {
	case !KernelFilterBuilt: // the ECU build: refused, naming the full build
		if err == nil || !strings.Contains(err.Error(), NotBuiltFilter) {
			t.Errorf("with a filter, in the ECU build: %v, want %q", err, NotBuiltFilter)
		}
	case err != nil && !errors.Is(err, unix.EPERM):
		t.Errorf("with a filter: %v", err)
	}
}
