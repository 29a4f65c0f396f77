//go:build !linux

package replay

import "syscall"

// udpReadySupported: no /proc/net/udp to find a bound port in.
const udpReadySupported = false

// nodeProcAttr puts the node in a process group of its own.
func nodeProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// UDPBound is 0: the socket table is read from Linux's /proc.
func UDPBound(int) uint64 { return 0 }

// GroupRunning reports whether process group pgid has a process left
// (zombies included: there is no /proc to tell them apart).
func GroupRunning(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
