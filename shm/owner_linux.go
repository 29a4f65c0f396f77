package shm

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ownerSlack is how much later than a segment's start_ns the process now
// holding its producer_pid may have started and still be taken for its
// producer: start_ns is written after the process started, so a later start
// means the pid was reused. The slack covers clock-tick rounding (10 ms)
// and small wall-clock steps.
const ownerSlack = int64(1e9)

// owner tracks whether a segment's producer process is alive. It resolves
// the pid once to a pidfd (Linux 5.3+), so a pid reused later by another
// process is never mistaken for the producer, and an exited producer that
// nobody reaped (a zombie) counts as gone. Where pidfd_open is refused it
// falls back to kill(pid, 0). Segments of one process share one pidfd
// (pidTable): descriptors grow with producer processes, not segments. Not
// safe for concurrent use.
type owner struct {
	pid     uint32
	startNs int64
	tab     *pidTable // nil: a pidfd of its own
	ref     *pidRef
	opened  bool
	dead    bool
}

func newOwner(pid uint32, startNs int64, tab *pidTable) owner {
	return owner{pid: pid, startNs: startNs, tab: tab}
}

// usablePID reports whether pid can name a producer in our pid namespace:
// not 0, not init (1: in a container, any producer may be pid 1 of its own
// namespace), not beyond PID_MAX_LIMIT. Liveness then rests on heartbeats
// and activity (FORMAT.md, "Liveness and closing").
func usablePID(pid uint32) bool { return pid > 1 && pid <= pidMaxLimit }

// pidMaxLimit is the kernel's PID_MAX_LIMIT (4 Mi on 64-bit).
const pidMaxLimit = 1 << 22

// gone reports whether the producer process no longer runs.
func (o *owner) gone() bool {
	if o.dead {
		return true
	}
	if !o.opened {
		o.opened = true
		if pidGone(o.pid) {
			o.dead = true
			return true
		}
		o.ref = o.tab.acquire(o.pid)
		// Checked after the pidfd is held: the process it names cannot
		// change any more.
		if notProducer(o.pid, o.startNs) {
			o.dead = true
			o.close()
			return true
		}
	}
	if o.ref != nil {
		if o.ref.exited() {
			o.dead = true
			o.close()
		}
		return o.dead
	}
	o.dead = pidGone(o.pid) || notProducer(o.pid, o.startNs)
	return o.dead
}

func (o *owner) close() {
	if o.ref != nil {
		o.tab.release(o.ref)
		o.ref = nil
	}
}

// pidTable shares one pidfd among the segments of one producer process.
// Safe for concurrent use; a nil table gives each owner a pidfd of its own.
type pidTable struct {
	mu   sync.Mutex
	refs map[uint32]*pidRef // the newest pidfd of each pid
}

// pidRef is one pidfd and how many owners hold it.
type pidRef struct {
	pid  uint32
	fd   int
	refs int
}

// exited reports whether the process the pidfd names has exited (reaped
// or not): a pidfd polls readable then.
func (r *pidRef) exited() bool {
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// acquire returns a pidfd of process pid, shared with other holders when
// the one the table has still names a running process (else a pid reused
// by a new process would be judged by the old one's exit); nil where
// pidfd_open is refused.
func (t *pidTable) acquire(pid uint32) *pidRef {
	if t == nil {
		fd, err := unix.PidfdOpen(int(pid), 0)
		if err != nil {
			return nil
		}
		return &pidRef{pid: pid, fd: fd, refs: 1}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.refs[pid]; r != nil && !r.exited() {
		r.refs++
		return r
	}
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return nil
	}
	r := &pidRef{pid: pid, fd: fd, refs: 1}
	if t.refs == nil {
		t.refs = map[uint32]*pidRef{}
	}
	t.refs[pid] = r
	return r
}

func (t *pidTable) release(r *pidRef) {
	if t == nil {
		unix.Close(r.fd)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.refs--; r.refs == 0 {
		unix.Close(r.fd)
		if t.refs[r.pid] == r {
			delete(t.refs, r.pid)
		}
	}
}

// ownerGone is the one-shot form of owner.gone, for a producer deciding
// whether it may replace a segment.
func ownerGone(pid uint32, startNs int64) bool {
	o := newOwner(pid, startNs, nil)
	defer o.close()
	return o.gone()
}

// notProducer reports whether process pid is certainly not the producer
// that stamped a segment with startNs: it is a zombie, or it started more
// than ownerSlack after startNs (its pid was reused). A startNs that is no
// wall-clock time since this boot (a producer on a virtual clock) is not
// judged by start time. Unreadable /proc entries say false.
func notProducer(pid uint32, startNs int64) bool {
	st, ok := readProcStat(pid)
	if !ok {
		return false
	}
	if st.state == 'Z' || st.state == 'X' {
		return true
	}
	var rt, bt unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &rt) != nil || unix.ClockGettime(unix.CLOCK_BOOTTIME, &bt) != nil {
		return false
	}
	bootNs := rt.Nano() - bt.Nano() // wall-clock time of boot
	if startNs < bootNs-ownerSlack || startNs > rt.Nano()+ownerSlack {
		return false
	}
	procStartNs := bootNs + int64(st.startTicks)*(1e9/clockTicks())
	return procStartNs > startNs+ownerSlack
}

type procStat struct {
	state      byte
	startTicks uint64
}

// readProcStat reads the state and start time (clock ticks since boot) of
// process pid from /proc/<pid>/stat.
func readProcStat(pid uint32) (procStat, bool) {
	var buf [1024]byte
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	n, _ := f.Read(buf[:])
	f.Close()
	return parseProcStat(buf[:n])
}

// parseProcStat parses "pid (comm) S ppid ... starttime ...": the command
// may hold spaces and parentheses, so fields count from the last ')'.
// starttime is field 22, the 20th after the command.
func parseProcStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, false
	}
	return procStat{state: fields[0][0], startTicks: start}, true
}

var clockTicks = sync.OnceValue(func() int64 {
	// AT_CLKTCK from the auxiliary vector; USER_HZ is 100 on every Linux
	// port Go runs on, which is also the fallback.
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	w := int(unsafe.Sizeof(uintptr(0)))
	for len(b) >= 2*w {
		var k, v uint64
		if w == 8 {
			k, v = binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:])
		} else {
			k, v = uint64(binary.NativeEndian.Uint32(b)), uint64(binary.NativeEndian.Uint32(b[4:]))
		}
		if k == 17 && v > 0 && v <= 1e9 { // AT_CLKTCK
			return int64(v)
		}
		if k == 0 {
			break
		}
		b = b[2*w:]
	}
	return 100
})
