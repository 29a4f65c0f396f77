package shm

import (
	"bytes"
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// watchDir returns a non-blocking inotify file watching dir for segments
// that appear (created, renamed in) or change.
func watchDir(dir string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	mask := uint32(unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_ATTRIB)
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch", err)
	}
	return os.NewFile(uintptr(fd), "inotify:"+dir), nil
}

// readEvents sends the file name of every event to out ("" after a queue
// overflow) until f is closed or stop is.
func readEvents(f *os.File, out chan<- string, stop <-chan struct{}) {
	send := func(s string) bool {
		select {
		case out <- s:
			return true
		case <-stop:
			return false
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			end := off + unix.SizeofInotifyEvent + nameLen
			if end > n {
				break
			}
			name := buf[off+unix.SizeofInotifyEvent : end]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off = end
			if mask&unix.IN_Q_OVERFLOW != 0 {
				if !send("") {
					return
				}
				continue
			}
			if len(name) > 0 && !send(string(name)) {
				return
			}
		}
	}
}
