package capture

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
	"golang.org/x/sys/unix"
)

// netns is a network namespace a test creates with iproute2 and removes in
// its cleanup. Traffic of the test stays inside it (and its veth peers).
type netns struct {
	t    testing.TB
	name string
}

var netnsSeq atomic.Int32

func newNetns(t testing.TB) *netns {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("needs iproute2's ip to create a network namespace: %v", err)
	}
	testutil.SkipUnlessRoot(t, "(CAP_SYS_ADMIN, CAP_NET_ADMIN) to create a network namespace")
	n := &netns{t: t, name: fmt.Sprintf("edrcap-%d-%d", os.Getpid(), netnsSeq.Add(1))}
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("needs permission to create a network namespace: ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.name, err, out)
		}
	})
	n.ip("link set lo up")
	return n
}

// ip runs "ip -n <ns> <args>", failing the test on error.
func (n *netns) ip(args string) {
	n.t.Helper()
	cmd := exec.Command("ip", append([]string{"-n", n.name}, strings.Fields(args)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		n.t.Fatalf("ip -n %s %s: %v: %s", n.name, args, err, out)
	}
}

// waitUp waits until the interface dev in the namespace is operationally
// up. "ip link set up" returns before the kernel's link watch has attached
// the device's queue: what is sent in between goes to the no-op queue and
// is dropped (TestUDPMulticastIPv6 received 0 of 20 datagrams that way).
// The wait is bounded; a link that never comes up fails the test.
func (n *netns) waitUp(dev string) {
	n.t.Helper()
	var out []byte
	for range 1000 { // 10 s
		var err error
		out, err = exec.Command("ip", "-n", n.name, "-o", "link", "show", "dev", dev).CombinedOutput()
		if err != nil {
			n.t.Fatalf("ip -n %s link show dev %s: %v: %s", n.name, dev, err, out)
		}
		if strings.Contains(string(out), "state UP") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	n.t.Fatalf("%s in %s did not come up: %s", dev, n.name, out)
}

// sysctl writes a /proc/sys value inside the namespace.
func (n *netns) sysctl(key, value string) {
	n.t.Helper()
	n.do(func() {
		path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
		// /proc/sys/net follows the netns of the thread that opens it.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			n.t.Fatalf("sysctl %s: %v", key, err)
		}
		defer f.Close()
		if _, err := f.WriteString(value); err != nil {
			n.t.Fatalf("sysctl %s=%s: %v", key, value, err)
		}
	})
}

// do runs f on a thread that has entered the namespace: sockets f creates
// live in it for good. The thread returns to its namespace afterwards, or
// is retired if it cannot.
func (n *netns) do(f func()) {
	n.t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		n.t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + n.name)
	if err != nil {
		runtime.UnlockOSThread()
		n.t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		testutil.SkipIfNotSupported(n.t, err) // needs CAP_SYS_ADMIN to enter a network namespace
		n.t.Fatal(err)
	}
	defer func() {
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: stay locked, so the runtime retires the thread
	}()
	f()
}

// sendTagged sends n 2-byte datagrams {tag, i} to the address to from a
// socket in namespace ns.
func sendTagged(t *testing.T, ns *netns, to string, n int, tag byte) {
	t.Helper()
	var c *net.UDPConn
	ns.do(func() { c = dialUDP(t, netip.MustParseAddrPort(to)) })
	for i := range n {
		if _, err := c.Write([]byte{tag, byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// vethPair connects two new namespaces with a veth pair, addressed
// 10.99.0.1/24 (a, interface "va") and 10.99.0.2/24 (b, interface "vb"),
// with IPv6 off so that no neighbour discovery adds frames.
func vethPair(t *testing.T) (a, b *netns) {
	a, b = newNetns(t), newNetns(t)
	for _, n := range []*netns{a, b} {
		n.sysctl("net.ipv6.conf.all.disable_ipv6", "1")
		n.sysctl("net.ipv6.conf.default.disable_ipv6", "1")
	}
	a.ip("link add va type veth peer name vb netns " + b.name)
	a.ip("addr add 10.99.0.1/24 dev va")
	b.ip("addr add 10.99.0.2/24 dev vb")
	a.ip("link set va up")
	b.ip("link set vb up")
	a.waitUp("va")
	b.waitUp("vb")
	// Static neighbour entries: a burst sent before ARP resolves waits in
	// the kernel's unresolved queue (unres_qlen_bytes, about 200 small
	// packets) and the rest is dropped there, which a test would read as
	// lost by the source.
	var macA, macB string
	a.do(func() { macA = hwaddr(t, "va") })
	b.do(func() { macB = hwaddr(t, "vb") })
	a.ip("neigh replace 10.99.0.2 lladdr " + macB + " dev va nud permanent")
	b.ip("neigh replace 10.99.0.1 lladdr " + macA + " dev vb nud permanent")
	return a, b
}

// hwaddr returns the MAC address of interface name in the current
// namespace.
func hwaddr(t *testing.T, name string) string {
	t.Helper()
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return ifi.HardwareAddr.String()
}
