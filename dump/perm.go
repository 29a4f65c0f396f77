package dump

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// DefaultFileMode is the mode of dump files when Config.FileMode is 0:
// readable by the recorder's user and group, not by other local users.
// The dump directory, when the recorder creates it, gets the same bits
// plus search permission where there is read (0750).
const DefaultFileMode os.FileMode = 0o640

// DirMode is the mode of a directory holding files of mode m: the same
// bits plus search where there is read (0640 -> 0750).
func DirMode(m os.FileMode) os.FileMode { return dirMode(m) }

// dirMode is the mode of a directory holding files of mode m.
func dirMode(m os.FileMode) os.FileMode {
	m = m.Perm()
	return m | (m&0o444)>>2
}

// lookupGroup resolves a group name or number to a gid; "" is -1 (the
// process's group is kept).
func lookupGroup(g string) (int, error) {
	if g == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(g); err == nil {
		if n < 0 {
			return 0, configErr("Group", "gid %d is negative", n)
		}
		return n, nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return 0, configErr("Group", "%v", err)
	}
	n, err := strconv.Atoi(gr.Gid)
	if err != nil {
		return 0, configErr("Group", "group %s has gid %q", g, gr.Gid)
	}
	return n, nil
}

// protect gives a new dump file its mode and group, before any data is
// written to it.
func (d *Dumper) protect(path string) error {
	if err := os.Chmod(path, d.cfg.FileMode); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	if d.gid >= 0 {
		if err := os.Chown(path, -1, d.gid); err != nil {
			return fmt.Errorf("dump: group of %s: %w", path, err)
		}
	}
	return nil
}
