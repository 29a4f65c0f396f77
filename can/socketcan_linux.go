package can

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/ingest"
)

// SocketCANOptions configure a SocketCAN source.
type SocketCANOptions struct {
	Interface string     // the CAN interface ("can0"); required
	Bus       BusOptions // the bus it feeds (Name defaults to Interface, Source to "socketcan:IF")
	// Filters, when any, pass only the frames they match, in the kernel
	// (CAN_RAW_FILTER); error frames always pass.
	Filters []IDFilter
}

// SocketCAN reads a CAN_RAW socket (CAN FD enabled, error frames on, the
// kernel's receive time stamps, its drop counter) into a Bus. Run, Close
// and Stats may be called from different goroutines; one Run at a time.
type SocketCAN struct {
	bus  *Bus
	file *os.File
	rc   syscall.RawConn
	name string

	mu      sync.Mutex
	running bool
	closed  bool
	done    chan struct{}

	// Owned by Run.
	buf   [LinuxFDMTU]byte
	oob   []byte
	fr    Frame
	drops uint32
}

// NewSocketCAN opens and binds the socket. A kernel without CAN is an
// error wrapping syscall.EAFNOSUPPORT (socket(AF_CAN) fails with it).
func NewSocketCAN(sink ingest.Sink, o SocketCANOptions) (*SocketCAN, error) {
	fd, err := openCAN(o)
	if err != nil {
		return nil, err
	}
	if o.Bus.Name == "" {
		o.Bus.Name = o.Interface
	}
	if o.Bus.Source == "" {
		o.Bus.Source = "socketcan:" + o.Interface
	}
	bus, err := NewBus(sink, o.Bus)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	s := &SocketCAN{bus: bus, file: os.NewFile(uintptr(fd), "can:"+o.Interface), name: o.Interface,
		oob: make([]byte, unix.CmsgSpace(16)+unix.CmsgSpace(4))}
	if s.rc, err = s.file.SyscallConn(); err != nil {
		s.file.Close()
		return nil, err
	}
	return s, nil
}

// ProbeSocketCAN opens and binds the socket NewSocketCAN would, and
// closes it again: what a configuration check needs to know that the
// source will open (a kernel with CAN, the interface, the filters).
func ProbeSocketCAN(o SocketCANOptions) error {
	fd, err := openCAN(o)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openCAN opens, sets up and binds the CAN_RAW socket of o.
func openCAN(o SocketCANOptions) (int, error) {
	if o.Interface == "" {
		return -1, fmt.Errorf("%w: a SocketCAN source needs an interface", ErrOptions)
	}
	fd, err := unix.Socket(unix.AF_CAN, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.CAN_RAW)
	if err != nil {
		return -1, fmt.Errorf("can: %s: socket(AF_CAN, CAN_RAW): %w", o.Interface, err)
	}
	// the interface's index by ioctl, not package net: dumpfile
	// links this package, and the readers of dumps link no network code
	ifr, err := unix.NewIfreq(o.Interface)
	if err == nil {
		err = unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("can: %s: no such interface: %w", o.Interface, err)
	}
	if err := setupCAN(fd, int(ifr.Uint32()), o.Filters); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("can: %s: %w", o.Interface, err)
	}
	return fd, nil
}

func setupCAN(fd, ifindex int, filters []IDFilter) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_CAN_RAW, unix.CAN_RAW_FD_FRAMES, 1); err != nil {
		return fmt.Errorf("CAN_RAW_FD_FRAMES: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_CAN_RAW, unix.CAN_RAW_ERR_FILTER, unix.CAN_ERR_MASK); err != nil {
		return fmt.Errorf("CAN_RAW_ERR_FILTER: %w", err)
	}
	if len(filters) > 0 {
		kf := make([]unix.CanFilter, len(filters))
		for i, f := range filters {
			kf[i] = unix.CanFilter{Id: f.ID, Mask: f.Mask | linuxEFF | linuxRTR}
			if f.Extended {
				kf[i].Id |= linuxEFF
			}
		}
		if err := unix.SetsockoptCanRawFilter(fd, unix.SOL_CAN_RAW, unix.CAN_RAW_FILTER, kf); err != nil {
			return fmt.Errorf("CAN_RAW_FILTER: %w", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1) // best effort: drops are then unknown
	return unix.Bind(fd, &unix.SockaddrCAN{Ifindex: ifindex})
}

// Bus returns the bus the source feeds (for its Stats).
func (s *SocketCAN) Bus() *Bus { return s.bus }

// Run reads frames until ctx is done (ctx.Err()) or Close (nil).
func (s *SocketCAN) Run(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return fmt.Errorf("can: Run: %w", os.ErrClosed)
	case s.running:
		s.mu.Unlock()
		return errors.New("can: Run already in progress")
	}
	s.running, s.done = true, make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		close(s.done)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { _ = s.file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var rerr error
	for {
		err := s.rc.Read(func(fd uintptr) bool {
			n, oobn, flags, _, err := unix.Recvmsg(int(fd), s.buf[:], s.oob, 0)
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				rerr = err
				return true
			}
			s.frame(n, oobn, flags)
			return true
		})
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		switch {
		case closed:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("can: %s: %w", s.name, err)
		case rerr != nil:
			return fmt.Errorf("can: %s: recvmsg: %w", s.name, rerr)
		}
	}
}

// frame records the frame just read: its time the kernel's stamp, its
// drop counter's growth reported lost.
func (s *SocketCAN) frame(n, oobn, flags int) {
	ts, drops, hasDrops := parseCmsgs(s.oob[:oobn])
	if ts == 0 {
		ts = time.Now().UnixNano()
	}
	if hasDrops && drops != s.drops {
		s.bus.Lost(ts, uint64(drops-s.drops))
		s.drops = drops
	}
	if FromLinux(s.buf[:n], &s.fr) != nil {
		return // the kernel gives only well-formed frames
	}
	if flags&unix.MSG_DONTROUTE != 0 && s.fr.Flags&ErrorFrame == 0 {
		s.fr.Flags |= Tx // sent from this host (candump -x's T)
	}
	s.bus.Record(ts, 0, &s.fr)
}

// Close stops Run, closes the socket and the bus's topics.
func (s *SocketCAN) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	running, done := s.running, s.done
	s.mu.Unlock()
	_ = s.file.SetReadDeadline(time.Unix(1, 0))
	if running {
		<-done
	}
	err := s.file.Close()
	s.bus.Close()
	return err
}
