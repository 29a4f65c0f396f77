package bench

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/edr-lite/edr-lite/shm"
)

// The floor of the whole-recorder budget: the least a reader of the same
// segments does. One goroutine maps every segment read-only and, every
// poll period, copies each segment's new ring bytes (records and padding
// alike, not parsed) into a private buffer of the ring's size, then checks
// the producer's tail did not pass what it copied (a lapped copy is
// dropped, as the recorder's would be). No record parsing, no topic
// table, no wake-ups but its own timer. It runs as a child process (this
// test binary with EDR_BUDGET_FLOOR set) so its CPU is measured apart.

// floorPoll is the floor's poll period (EDR_BUDGET_FLOOR_POLL; see
// docs/performance.md for the choice).
func floorPoll() time.Duration {
	if s := os.Getenv("EDR_BUDGET_FLOOR_POLL"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return defaultFloorPoll
}

// defaultFloorPoll is the floor's poll period.
const defaultFloorPoll = time.Millisecond

type floorProc struct {
	cmd  *exec.Cmd
	out  *strings.Builder
	done bool
}

// startFloor starts the floor over the segments at paths.
func startFloor(tb testing.TB, paths []string, poll time.Duration) *floorProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "EDR_BUDGET_FLOOR="+strings.Join(paths, "\n"), "EDR_BUDGET_FLOOR_POLL="+poll.String())
	f := &floorProc{cmd: cmd, out: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = f.out, f.out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return f
}

// stop ends the floor and returns the bytes it copied.
func (f *floorProc) stop() uint64 {
	if f.done {
		return 0
	}
	f.done = true
	f.cmd.Process.Signal(syscall.SIGTERM)
	f.cmd.Wait()
	n, _ := strconv.ParseUint(strings.TrimSpace(f.out.String()), 10, 64)
	return n
}

// floorSeg is one mapped segment.
type floorSeg struct {
	mem    []byte
	ring   []byte
	write  *atomic.Uint64
	tail   *atomic.Uint64
	mask   uint64
	rpos   uint64
	buf    []byte
	wpos   int
	copied uint64
}

// runFloor is the floor process's main: it never returns.
func runFloor(pathList string) {
	var segs []*floorSeg
	for _, p := range strings.Split(pathList, "\n") {
		s, err := mapFloorSeg(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		segs = append(segs, s)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	tick := time.NewTicker(floorPoll())
	for {
		select {
		case <-term:
			var n uint64
			for _, s := range segs {
				n += s.copied
			}
			fmt.Println(n)
			os.Exit(0)
		case <-tick.C:
		}
		for _, s := range segs {
			s.poll()
		}
	}
}

func mapFloorSeg(path string) (*floorSeg, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	hdrSize := uint64(le.Uint32(mem[12:]))
	capa := le.Uint64(mem[24:])
	base := unsafe.Pointer(unsafe.SliceData(mem))
	s := &floorSeg{mem: mem, ring: mem[hdrSize : hdrSize+capa], mask: capa - 1,
		write: (*atomic.Uint64)(unsafe.Add(base, shm.CursorLine)),
		tail:  (*atomic.Uint64)(unsafe.Add(base, shm.CursorLine+8)),
		buf:   make([]byte, capa)}
	clear(s.buf) // touched now, as the recorder's arena
	s.rpos = s.write.Load()
	return s, nil
}

// poll copies the ring bytes written since the last poll.
func (s *floorSeg) poll() {
	w := s.write.Load()
	if w == s.rpos {
		return
	}
	if t := s.tail.Load(); t > s.rpos {
		s.rpos = t // lapped: start at the oldest record there
	}
	start := s.wpos
	for r := s.rpos; r < w; {
		off := r & s.mask
		n := min(w-r, uint64(len(s.ring))-off)
		if s.wpos+int(n) > len(s.buf) {
			s.wpos = 0
		}
		copy(s.buf[s.wpos:], s.ring[off:off+n])
		s.wpos += int(n)
		r += n
	}
	if s.tail.Load() > s.rpos { // the producer overwrote part of the copy
		s.wpos = start
		s.rpos = w
		return
	}
	s.copied += w - s.rpos
	s.rpos = w
}
