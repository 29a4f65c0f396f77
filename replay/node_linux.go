package replay

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// udpReadySupported: a UDP port's socket is found in /proc/net/udp{,6}.
const udpReadySupported = true

// nodeProcAttr puts the node in a process group of its own (stopped as a
// whole) that is killed should the replay die without stopping it.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// UDPBound returns the inode of a UDP socket bound to local port (IPv4 or
// IPv6) in the calling thread's network namespace, 0 when there is none:
// /proc/thread-self/net/udp lists "sl local_address rem_address st tx:rx
// tr:when retrnsmt uid timeout inode ...", the address as HEX_IP:HEX_PORT.
// Not /proc/net (/proc/self/net), the namespace of the process's main
// thread, which a host that entered another namespace on a locked thread
// can leave behind (Go keeps a retired main thread); /proc/net only on a
// kernel without /proc/thread-self (before 3.17).
func UDPBound(port int) uint64 {
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(want) < 4 {
		want = "0" + want
	}
	base := "/proc/thread-self/net/"
	if _, err := os.Stat(base); err != nil {
		base = "/proc/net/"
	}
	for _, f := range []string{base + "udp", base + "udp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for n := 0; sc.Scan() && n < 1<<16; n++ {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || !strings.HasSuffix(fs[1], ":"+want) {
				continue
			}
			if ino, err := strconv.ParseUint(fs[9], 10, 64); err == nil && ino != 0 {
				file.Close()
				return ino
			}
		}
		file.Close()
	}
	return 0
}

// GroupRunning reports whether a process of process group pgid is still
// running (the node under test's group is its pid). A zombie does not
// count: a child the node left is reparented, and may never be reaped in
// a container whose init does not reap.
func GroupRunning(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(string(b[i+1:]))
		if len(fs) >= 3 && fs[0] != "Z" && fs[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
