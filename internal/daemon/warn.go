package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/internal/config"
)

// Warnings returns what in f passes Check but will not work as the file
// most likely means it, each at its key and line: a shared-memory
// directory that does not exist (no producer writes there yet) or is not
// in memory (tmpfs), a UDP or HTTP port another process holds now, a
// control socket another recorder listens on, an HTTP listener without a
// token (anyone who reaches it reads /status and
// /metrics). "config check" prints them and exits 0 when nothing else is
// wrong; New logs them.
func Warnings(f *config.File) []*config.Problem {
	var ps []*config.Problem
	add := func(key, format string, args ...any) { ps = append(ps, f.Problem(key, format, args...)) }
	for i, s := range f.Sources.SHM {
		if s.Dir == "" {
			continue
		}
		if w := shmDirWarning(s.Dir); w != "" {
			add(fmt.Sprintf("source.shm[%d].dir", i), "%s", w)
		}
	}
	for i, s := range f.Sources.UDP {
		o, ok := udpProbeOptions(s)
		if !ok {
			continue // Check reports it
		}
		if err := capture.ProbeUDP(o); errors.Is(err, unix.EADDRINUSE) {
			add(fmt.Sprintf("source.udp[%d].listen", i), "%s is in use now by another process (a recorder already running?): run fails while it is", o.Addr)
		}
	}
	if p := f.Control.Socket; p != "" {
		if c, err := net.DialTimeout("unix", p, 200*time.Millisecond); err == nil {
			c.Close()
			add("control.socket", "%s: a recorder listens on it now: run fails while it does", p)
		}
	}
	warnHTTP(f, add)
	if w := signingWarning(f); w != "" {
		add("recorder.dump_dir", "%s", w)
	}
	return ps
}

// udpProbeOptions are the options NewUDP gets for s (ok false when the
// address does not parse: Check says so).
func udpProbeOptions(s config.UDPSource) (capture.UDPOptions, bool) {
	port, err := hostPort(s.Listen)
	if err != nil {
		return capture.UDPOptions{}, false
	}
	addr := s.Listen
	if s.Group != "" {
		addr = net.JoinHostPort(s.Group, strconv.Itoa(port))
	}
	return capture.UDPOptions{Addr: addr, Interface: s.Interface, Topic: s.Topic, Type: s.Type, MaxPacket: int(s.MaxPacket),
		GRO: s.GRO, Channel: s.Channel}, true
}

// Filesystem magic numbers of memory-backed filesystems (statfs(2)).
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// shmDirWarning says why a shared-memory source directory will not work
// as meant ("" when it will): it does not exist (run creates it, but no
// producer has written a segment there), or it is not on a memory-backed
// filesystem (segments there are written back to disk).
func shmDirWarning(dir string) string {
	_, err := os.Stat(dir)
	missing := errors.Is(err, fs.ErrNotExist)
	onDisk := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil {
			// Type is int32 on 32-bit ARM: compare the magic's 32 bits
			if t := uint32(st.Type); t != tmpfsMagic && t != ramfsMagic {
				onDisk = d
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	switch {
	case missing && onDisk != "":
		return fmt.Sprintf("%s does not exist: run creates it on a disk filesystem, not tmpfs, and no producer writes its segments there yet (producers and the recorder must use one directory, best under /dev/shm)", dir)
	case missing:
		return fmt.Sprintf("%s does not exist: run creates it, but no producer writes its segments there yet (producers and the recorder must use one directory)", dir)
	case onDisk != "":
		return fmt.Sprintf("%s is on a disk filesystem, not tmpfs: every page of its segments is written back to disk (use a directory under /dev/shm)", dir)
	}
	return ""
}
