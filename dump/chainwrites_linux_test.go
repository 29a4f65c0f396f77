package dump

import (
	"crypto/rand"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/evidence"
)

// TestChainOneLedgerWritePerDump: a signed dump that makes the rotation
// remove an older one writes the chain's ledger once, not twice (the
// removal is recorded with the new dump: each write is two fsyncs, which
// an ECU's eMMC pays dearly), and the directory still checks out, the
// rotated dumps told from deleted ones. Counted as the disk sees it: the
// ledger's replacements (renames onto it), through inotify (watching the
// renames' both ends, so that no two are alike in a row: inotify merges
// those).
func TestChainOneLedgerWritePerDump(t *testing.T) {
	s, err := evidence.GenerateSigner(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_FROM|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	const n, maxFiles = 5, 2
	signedDumps(t, s, dir, n, maxFiles, 1_000*ms, Config{})
	writes := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			if name == evidence.LedgerName && ev.Mask&unix.IN_MOVED_TO != 0 {
				writes++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	// One when the chain starts (its first ledger), one per dump: the
	// n-maxFiles rotations add none (they added one each: 9).
	if writes != 1+n {
		t.Errorf("the ledger was written %d times for %d dumps, %d of them rotating an older one out: want %d", writes, n, n-maxFiles, 1+n)
	}
	keys := &evidence.Keyring{}
	keys.Add(s.Public())
	if r := judgeDir(t, dir, keys); !r.OK() || r.Rotated != n-maxFiles || r.Present != maxFiles || len(r.Notes) != 0 {
		t.Fatalf("chain: %+v", r)
	}
}
