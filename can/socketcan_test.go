package can

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestLinuxFrames(t *testing.T) {
	for _, f := range []Frame{
		frameOf(0x123, 0, 1, 2, 3),
		frameOf(0x1abcdef, Extended, 1, 2, 3, 4, 5, 6, 7, 8),
		{ID: 0x7ff, Flags: RTR, DLC: 4},
		{ID: 0x100, DLC: 13, Len: 8, Data: [64]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		frameOf(0x100, FD|BRS|ESI, make([]byte, 48)...),
		{ID: ErrClassBusOff, Flags: ErrorFrame, DLC: 8, Len: 8, Data: [64]byte{0, 0, 4}},
	} {
		b := AppendLinux(nil, &f)
		var g Frame
		if err := FromLinux(b, &g); err != nil || g != f {
			t.Errorf("%+v: back as %+v, %v", f, g, err)
		}
	}
	for want, b := range map[string][]byte{
		"15 bytes":             make([]byte, 15),
		"a classic frame of 9": append([]byte{1, 0, 0, 0, 9}, make([]byte, 11)...),
		"a CAN FD frame of 9":  append([]byte{1, 0, 0, 0, 9}, make([]byte, 67)...),
		"other bits set":       append([]byte{1, 0, 0, 0x10, 0}, make([]byte, 11)...),
	} {
		var f Frame
		if err := FromLinux(b, &f); err == nil || !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

func TestParseIDFilter(t *testing.T) {
	for in, want := range map[string]IDFilter{
		"0x123":       {ID: 0x123, Mask: 0x7ff},
		"0x100/0x700": {ID: 0x100, Mask: 0x700},
		"0x18FEF100x": {ID: 0x18fef100, Mask: 0x1fffffff, Extended: true},
		"291":         {ID: 291, Mask: 0x7ff},
	} {
		if got, err := ParseIDFilter(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0x800", "x", "0x100/0x800", "0x100/", "abc"} {
		if _, err := ParseIDFilter(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestSocketCAN opens a CAN_RAW socket on lo, which must fail (not a CAN
// interface); where the kernel has no AF_CAN (this machine's) the socket
// cannot be made at all and the test skips, saying so.
func TestSocketCAN(t *testing.T) {
	rec := newRecorder(t)
	s, err := NewSocketCAN(rec, SocketCANOptions{Interface: "lo"})
	if errors.Is(err, syscall.EAFNOSUPPORT) {
		t.Skipf("the kernel has no AF_CAN (no CAN support): %v", err)
	}
	if err == nil {
		s.Close()
		t.Fatal("a CAN_RAW socket bound to lo, not a CAN interface")
	}
	t.Logf("binding to lo fails as it should: %v", err)
}
