package can

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ethFrames is every kind of frame a capture module sends.
func ethFrames() []EthMessage {
	return []EthMessage{
		{Device: 7, Interface: 1, TimeNs: 1796218342000100000, Frame: frameOf(0x123, 0, 0xde, 0xad, 0xbe, 0xef)},
		{Device: 7, Interface: 2, TimeNs: 1796218342000200000, Frame: frameOf(0x1abcdef, Extended|Tx, 1, 2, 3, 4, 5, 6, 7, 8)},
		{Device: 7, Interface: 1, TimeNs: 1796218342000300000, Frame: Frame{ID: 0x7ff, Flags: RTR, DLC: 3}},
		{Device: 7, Interface: 1, TimeNs: 1796218342000400000, Overflow: true, Frame: frameOf(0x10, 0)},
	}
}

func ethFDFrames() []EthMessage {
	return []EthMessage{
		{Device: 7, Interface: 3, TimeNs: 1796218342000500000, Frame: frameOf(0x100, FD|BRS, make([]byte, 12)...)},
		{Device: 7, Interface: 3, TimeNs: 1796218342000600000, Frame: frameOf(0x1000000, FD|Extended|ESI, 9, 8, 7)},
	}
}

func parseAll(t *testing.T, parse func([]byte, func(*EthMessage)) (int, error), b []byte) []EthMessage {
	t.Helper()
	var out []EthMessage
	sk, err := parse(b, func(m *EthMessage) { out = append(out, *m) })
	if err != nil || sk != 0 {
		t.Fatalf("%d skipped, %v", sk, err)
	}
	return out
}

func TestEthRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		parse  func([]byte, func(*EthMessage)) (int, error)
		append func([]byte, uint16, uint16, []EthMessage) []byte
	}{{"cmp", ParseCMP, AppendCMP}, {"tecmp", ParseTECMP, AppendTECMP}} {
		for _, ms := range [][]EthMessage{ethFrames(), ethFDFrames()} {
			b := c.append(nil, 7, 1, ms)
			b = append(b, make([]byte, 20)...) // Ethernet padding
			got := parseAll(t, c.parse, b)
			if len(got) != len(ms) {
				t.Fatalf("%s: %d messages, want %d", c.name, len(got), len(ms))
			}
			for i := range ms {
				if got[i] != ms[i] {
					t.Errorf("%s: message %d: %+v, want %+v", c.name, i, got[i], ms[i])
				}
			}
		}
	}
}

// TestEthLyingLengths: a frame whose lengths say more than it holds, at
// every cut, is an error naming the offset, never a read past the end;
// the messages before the fault are given.
func TestEthLyingLengths(t *testing.T) {
	for _, c := range []struct {
		name  string
		parse func([]byte, func(*EthMessage)) (int, error)
		b     []byte
	}{{"cmp", ParseCMP, AppendCMP(nil, 7, 1, ethFrames())}, {"tecmp", ParseTECMP, AppendTECMP(nil, 7, 1, ethFrames())}} {
		for cut := 1; cut < len(c.b); cut++ {
			var n int
			_, err := c.parse(c.b[:cut], func(*EthMessage) { n++ })
			if err != nil && (!errors.Is(err, ErrEth) || !strings.Contains(err.Error(), "offset ")) {
				t.Fatalf("%s cut at %d: %v", c.name, cut, err)
			}
		}
	}
	b := AppendCMP(nil, 7, 1, ethFrames()[:1])
	binary.BigEndian.PutUint16(b[8+14:], 60000) // the message's payload length
	if _, err := ParseCMP(b, func(*EthMessage) {}); err == nil || !strings.Contains(err.Error(), "offset 22: a payload of 60000 bytes") {
		t.Errorf("CMP payload length: %v", err)
	}
	b = AppendCMP(nil, 7, 1, ethFrames()[:1])
	b[8+16+15] = 40 // the CAN data length
	if _, err := ParseCMP(b, func(*EthMessage) {}); err == nil || !strings.Contains(err.Error(), "offset 39: a data length of 40") {
		t.Errorf("CMP data length: %v", err)
	}
	b = AppendTECMP(nil, 7, 1, ethFrames()[:1])
	binary.BigEndian.PutUint16(b[12+12:], 999)
	if _, err := ParseTECMP(b, func(*EthMessage) {}); err == nil || !strings.Contains(err.Error(), "offset 24: an entry of 999 bytes") {
		t.Errorf("TECMP entry length: %v", err)
	}
}

func TestEthDecoder(t *testing.T) {
	rec := newRecorder(t)
	d, err := NewEthDecoder(rec, EthOptions{Protocol: "cmp", Source: "cmp:test", Names: map[uint64]string{7<<32 | 1: "body"}})
	if err != nil {
		t.Fatal(err)
	}
	b := AppendCMP(nil, 7, 1, ethFrames())
	if err := d.Handle(1000, EtherTypeCMP, b); err != nil {
		t.Fatal(err)
	}
	d.Handle(1001, EtherTypeCMP, b[:30])
	d.Handle(1002, 0x0800, b)
	got := readAll(t, rec, "can/body")
	if len(got) != 3 || got[0].CaptureNs != 1000 || got[0].GenNs != 1796218342000100000 {
		t.Fatalf("can/body: %+v", got)
	}
	if n := len(readAll(t, rec, "can/7-2")); n != 1 {
		t.Errorf("can/7-2: %d frames", n)
	}
	st := d.Stats()
	if st.Frames != 2 || st.Messages != 4 || st.Malformed != 1 || st.Overflows != 1 || !strings.Contains(st.FirstError, "offset 22: a payload of 20 bytes, 6 left") {
		t.Errorf("stats %+v", st)
	}
	if _, err := NewEthDecoder(rec, EthOptions{Protocol: "someip"}); err == nil {
		t.Error("an unknown protocol")
	}
	d.Close()
}

// writePcap writes Ethernet frames carrying payloads on EtherType 0x99FE
// to a pcap file.
func writePcap(t *testing.T, path string, payloads [][]byte) {
	t.Helper()
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 65535)
	b = le.AppendUint32(b, 1) // Ethernet
	for i, p := range payloads {
		fr := append([]byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x99, 0xfe}, p...)
		b = le.AppendUint32(b, uint32(1796218342+i))
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, uint32(len(fr)))
		b = le.AppendUint32(b, uint32(len(fr)))
		b = append(b, fr...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTECMPAgainstTshark: Wireshark's TECMP dissector (Debian's tshark)
// reads the frames AppendTECMP writes as the interfaces, time stamps, IDs
// and data ParseTECMP reads. (Debian 12's tshark 4.0 has no ASAM CMP
// dissector; CMP is checked by the round trip and the veth test.)
func TestTECMPAgainstTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skipf("tshark not installed (Debian: apt-get install tshark; .ci/run installs it): %v", err)
	}
	ms := ethFrames()
	var payloads [][]byte
	for i := range ms {
		payloads = append(payloads, AppendTECMP(nil, 7, uint16(i), ms[i:i+1]))
	}
	path := filepath.Join(t.TempDir(), "tecmp.pcap")
	writePcap(t, path, payloads)
	cmd := exec.Command(tshark, "-r", path, "-T", "fields", "-E", "separator=,", "-e", "tecmp.payload.interface_id",
		"-e", "tecmp.payload.timestamp_ns", "-e", "tecmp.payload.data.can_id_field", "-e", "tecmp.payload.data.payload_length",
		"-e", "tecmp.payload.data_flags")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(ms) {
		t.Fatalf("tshark read %d frames:\n%s", len(lines), out)
	}
	for i, l := range lines {
		f := strings.Split(l, ",")
		m := ms[i]
		idf := m.Frame.ID
		if m.Frame.Flags&Extended != 0 {
			idf |= 0x80000000
		}
		n := m.Frame.Len
		if m.Frame.Flags&RTR != 0 {
			n = m.Frame.DLC
		}
		want := []string{fmt.Sprintf("0x%08x", m.Interface), strconv.FormatInt(m.TimeNs, 10), fmt.Sprintf("0x%08x", idf), strconv.Itoa(int(n))}
		if len(f) < 4 || f[0] != want[0] || f[1] != want[1] || f[2] != want[2] || f[3] != want[3] {
			t.Errorf("frame %d: tshark %q, want %q", i, f, want)
		}
	}
}
