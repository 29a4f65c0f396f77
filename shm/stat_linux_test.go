package shm

import (
	"testing"

	"golang.org/x/sys/unix"
)

func statGID(t testing.TB, path string) uint32 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Gid
}
