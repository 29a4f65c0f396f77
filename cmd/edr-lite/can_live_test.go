package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// canNetns makes a network namespace holding a veth pair va <-> vb, up,
// IPv6 off (no neighbour discovery frames); it is removed at cleanup.
func canNetns(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("needs iproute2's ip to create a network namespace: %v", err)
	}
	testutil.SkipUnlessRoot(t, "(CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW) for a network namespace and a raw capture")
	ns := fmt.Sprintf("edrcan-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("needs permission to create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, args := range []string{"link add va type veth peer name vb", "link set va up", "link set vb up", "link set lo up"} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, strings.Fields(args)...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", ns, args, err, out)
		}
	}
	for _, k := range []string{"all", "default", "va", "vb"} {
		exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1").Run()
	}
	return ns
}

// cmpProducer is the test producer: an AF_PACKET socket in namespace ns
// bound to vb, sending ASAM CMP frames to va.
type cmpProducer struct {
	fd  int
	seq uint16
}

func newCMPProducer(t *testing.T, ns string) *cmpProducer {
	t.Helper()
	var p cmpProducer
	errc := make(chan error, 1)
	go func() { // on a thread that enters ns and is retired afterwards
		runtime.LockOSThread()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		ifi, err := net.InterfaceByName("vb")
		if err != nil {
			errc <- err
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
		}
		p.fd = fd
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("the CMP producer's socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(p.fd) })
	return &p
}

// send sends one CMP frame holding ms.
func (p *cmpProducer) send(t *testing.T, ms []can.EthMessage) {
	t.Helper()
	fr := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 7, 0x99, 0xfe}, can.AppendCMP(nil, 7, p.seq, ms)...)
	p.seq++
	if _, err := unix.Write(p.fd, fr); err != nil {
		t.Fatal(err)
	}
}

func brakeFrame(decibar uint16) can.Frame {
	f := can.Frame{ID: 257, DLC: 8, Len: 8}
	f.Data[0], f.Data[1] = byte(decibar>>4), byte(decibar<<4)
	return f
}

// TestCANLiveCMP: frames a test producer sends as ASAM CMP over a veth are
// recorded by "edr-lite run" ([[source.can]] ethernet, its eBPF filter on
// EtherType 0x99FE) as the same frames, decoded by the DBC; a rule on the
// DBC signal BrakePressure fires at the frame that crosses 200 bar, and
// "rules test" on the dump it wrote fires at the same frame (exit 0: the
// recorded trigger and the replayed one match). Status shows the bus's
// accounting.
func TestCANLiveCMP(t *testing.T) {
	ns := canNetns(t)
	dbc, err := os.ReadFile(filepath.Join("..", "..", "can", "testdata", "vehicle.dbc"))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemonIn(t, ns, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "32MiB"
pre = "2s"
post = "300ms"
guard = "100ms"
[rotation]
min_free_disk = 0
[control]
socket = "$DIR/edr.sock"
[[source.can]]
ethernet = "va"
protocol = "cmp"
dbc = "vehicle.dbc"
buses = { "7-1" = "can0" }
[[rule]]
builtin = "threshold"
params = { topic = "can/can0/Brake", path = "BrakePressure", high = "200", reason = "hard_brake" }
`, map[string]string{"vehicle.dbc": string(dbc)})
	p := newCMPProducer(t, ns)
	// A veth just brought up may drop the first frames, and a rule opens
	// a topic that appears (the first Brake frame makes can/can0/Brake)
	// at its next topic poll: warm-up frames, a low pressure, until the
	// rule has read one.
	waitFor(t, func() bool {
		p.send(t, []can.EthMessage{{Device: 7, Interface: 9, TimeNs: time.Now().UnixNano(), Frame: can.Frame{ID: 1}},
			{Device: 7, Interface: 1, TimeNs: time.Now().UnixNano(), Frame: brakeFrame(10)}})
		time.Sleep(50 * time.Millisecond)
		rs := d.rules(t)
		return len(rs) == 1 && rs[0].Messages > 0
	}, "the rule reading can/can0/Brake")
	base := time.Now().UnixNano()
	pressures := []uint16{500, 1000, 1500, 2748, 2000, 100} // decibar: the 4th crosses 200 bar
	for i, dp := range pressures {
		ws := can.Frame{ID: 256, DLC: 8, Len: 8, Data: [64]byte{0x10, 0x27}}
		p.send(t, []can.EthMessage{
			{Device: 7, Interface: 1, TimeNs: base + int64(i)*10e6, Frame: brakeFrame(dp)},
			{Device: 7, Interface: 1, TimeNs: base + int64(i)*10e6 + 1000, Frame: ws},
			{Device: 7, Interface: 2, TimeNs: base + int64(i)*10e6 + 2000, Frame: can.Frame{ID: 0x555, DLC: 1, Len: 1}},
		})
		time.Sleep(20 * time.Millisecond)
	}
	p.send(t, []can.EthMessage{{Device: 7, Interface: 1, TimeNs: base + 1e9, Frame: can.Frame{ID: 0x7ff, DLC: 2, Len: 2}}})
	var dumpPath string
	defer func() {
		if t.Failed() {
			_, out, _ := runBin(t, "status", "--socket", d.sock, "--json")
			t.Logf("status: %s", out)
		}
	}()
	waitFor(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(d.dir, "dumps", "*.pack"))
		if len(m) == 1 {
			dumpPath = m[0]
		}
		return dumpPath != ""
	}, "the rule's dump")
	time.Sleep(200 * time.Millisecond)

	// The dump holds the frames as sent and the decoded messages.
	code, out, errs := runBin(t, "cat", "--decode", "--topics", "can/can0", dumpPath)
	if code != 0 || strings.Count(out, `"topic":"can/can0"`) < len(pressures)*2+1 {
		t.Fatalf("cat can/can0: %d %s %s", code, out, errs)
	}
	if !strings.Contains(out, `"data":{"id":257,"len":8,"dlc":8,"flags":0,"data":[171,192,0,0,0,0,0,0]}`) {
		t.Errorf("the crossing frame is not in the dump as sent:\n%s", out)
	}
	code, out, _ = runBin(t, "cat", "--decode", "--topics", "can/can0/Brake", dumpPath)
	if code != 0 || !strings.Contains(out, `"BrakePressure":274.8`) {
		t.Errorf("cat can/can0/Brake: %d %s", code, out)
	}
	in := readInfoJSON(t, dumpPath)
	if len(in.Triggers) != 1 || in.Triggers[0].Reason != "hard_brake" {
		t.Fatalf("triggers %+v", in.Triggers)
	}
	// rules test replays the dump through the same rule: the same trigger.
	code, out, errs = runBin(t, "rules", "test", "--rules", "builtin:threshold", "--param", "threshold.topic=can/can0/Brake",
		"--param", "threshold.path=BrakePressure", "--param", "threshold.high=200", "--param", "threshold.reason=hard_brake", dumpPath)
	if code != 0 {
		t.Errorf("rules test on the dump: %d\n%s\n%s", code, out, errs)
	}

	// Status: the bus's accounting and the capture's.
	code, out, _ = runBin(t, "status", "--socket", d.sock, "--json")
	var st struct {
		CAN []struct {
			Bus, Topic                      string
			Frames, Decoded, Unknown, Short uint64
			UnknownIDs                      []string `json:"unknown_ids"`
			Messages                        map[string]uint64
		}
		CANCapture []struct {
			Frames, Messages, Malformed uint64
		} `json:"can_capture"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.CAN) != 3 || len(st.CANCapture) != 1 {
		t.Fatalf("status: %d %s", code, out)
	}
	b, b0 := st.CAN[0], st.CAN[2] // by name: 7-2, 7-9, can0
	if b0.Bus != "can0" || b0.Frames != b0.Messages["Brake"]+uint64(len(pressures))+1 || b0.Messages["Brake"] <= uint64(len(pressures)) ||
		b0.Unknown != 1 || len(b0.UnknownIDs) != 1 || b0.UnknownIDs[0] != "7FF" {
		t.Errorf("status of can0: %+v", b0)
	}
	if b.Bus != "7-2" || b.Topic != "can/7-2" || b.Frames != uint64(len(pressures)) {
		t.Errorf("status of 7-2: %+v", b)
	}
	if c := st.CANCapture[0]; c.Frames < uint64(len(pressures))+2 || c.Messages != c.Frames*2+uint64(len(pressures))-1 || c.Malformed != 0 {
		t.Errorf("capture status %+v", c)
	}
}

// startDaemonIn is startDaemon with the recorder in network namespace ns.
func startDaemonIn(t *testing.T, ns, cfg string, files map[string]string) *runningDaemon {
	t.Helper()
	return startDaemon(t, cfg, files, func(c *exec.Cmd) {
		c.Args = append([]string{"ip", "netns", "exec", ns}, c.Args...)
		c.Path, _ = exec.LookPath("ip")
	})
}

// TestCANConfigCheck: config check names every [[source.can]] mistake
// with its key and line, as run would refuse it.
func TestCANConfigCheck(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.dbc"), []byte("BO_ 1 A: 8 X\n SG_ S : 60|8@1+ (1,0) [0|0] \"\" X\n"), 0o644)
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(`[recorder]
dump_dir = "`+dir+`/dumps"
[[source.can]]
fd = true
[[source.can]]
ethernet = "lo"
protocol = "someip"
[[source.can]]
interface = "lo"
filters = ["0x800"]
dbc = "bad.dbc"
[[source.can]]
ethernet = "lo"
buses = { "seven" = "x" }
`), 0o600)
	code, out, errs := runBin(t, "config", "check", cfg)
	all := out + errs
	for _, want := range []string{
		"edr.toml:3: source.can[0]: give interface (SocketCAN), ethernet (CAN over Ethernet: ASAM CMP, TECMP) or candump",
		"source.can[1].protocol: \"someip\": want cmp or tecmp",
		"source.can[2].filters: bad options: ID filter \"0x800\"", // in the user's words: no package prefix
		"source.can[2].dbc: bad DBC: " + filepath.Join(dir, "bad.dbc") + ": message A, signal S: bits 60..67 beyond",
		"source.can[3].buses: \"seven\" = \"x\": want \"DEVICE-INTERFACE\"",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("config check does not say %q:\n%s", want, all)
		}
	}
	if code == 0 {
		t.Errorf("config check exit 0:\n%s", all)
	}
	code, _, errs = runBin(t, "run", "--config", cfg)
	if code == 0 || !strings.Contains(errs, "source.can[0]") {
		t.Errorf("run: %d %s", code, errs)
	}
}
