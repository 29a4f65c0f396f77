package shm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
)

// reapSeq numbers the names removeIfID moves files to, so two removals in
// one process never share one.
var reapSeq atomic.Uint64

// testHookBeforeReap, when set by a test, runs just before a finished
// segment's file is removed: where a producer replacing it would have
// renamed its new segment into place.
var testHookBeforeReap func(path string)

// removeIfID removes the file at path if it is the file id, and leaves any
// other file there.
//
// There is no unlink-if-this-inode system call, and a check (lstat) then
// an unlink removes whatever is at path by then: a producer that restarts
// (a replay whose topic changes type, a node restarting) closes its
// segment and at once renames its new one over it, so a consumer reaping
// the closed segment removed the new one, unread, and every message of
// the restarted producer was lost. So the file is renamed aside first (a
// rename is atomic: exactly one file moves, whatever is there), checked
// where no producer will touch it, removed if it is id, and otherwise put
// back with RENAME_NOREPLACE. While it is aside (microseconds) the name is
// free; should a third producer take it in that window, the file aside
// has been replaced twice over and is removed, and the error says so.
func removeIfID(path string, id fileID) error {
	aside := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+
		strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(reapSeq.Add(1), 10)+".reap")
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi, err := lstat(aside); err == nil && fi.id == id {
		return os.Remove(aside)
	}
	if err := renameNoReplace(aside, path); err != nil {
		return errors.Join(fmt.Errorf("shm: segment %s was replaced twice while its old file was removed: the middle one is dropped: %w", path, err),
			os.Remove(aside))
	}
	return nil
}
