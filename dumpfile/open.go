package dumpfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is returned for an input path that is not a regular file:
// a named pipe would block every verb until a writer appears, a directory
// or a device is no dump.
var ErrNotRegular = errors.New("dumpfile: not a regular file")

// OpenRegular opens path for reading if it is a regular file (after
// symlinks). A named pipe is opened without blocking and refused, with a
// hint to pipe it into "-" where the verb reads standard input.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkRegular(path, st.Mode()); err != nil {
		f.Close()
		return nil, err
	}
	// back to blocking reads for a regular file (O_NONBLOCK has no effect
	// on them, but keep the descriptor as os.Open would give it)
	unix.SetNonblock(int(f.Fd()), false)
	return f, nil
}

// CheckRegular refuses a path that is not a regular file, naming what it
// is.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkRegular(path, st.Mode())
}

func checkRegular(path string, m fs.FileMode) error {
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO); pipe it into \"-\" where the verb reads standard input"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, what)
}
