//go:build !ecu

package upload

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/internal/s3test"
)

// startWithLogs starts an uploader over dir (no server: nothing uploads)
// and returns it with what it logged.
func startWithLogs(t *testing.T, dir string) (*Uploader, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	o := Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s", Dir: dir,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	u, err := New(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(); err != nil {
		t.Fatal(err)
	}
	u.Stop()
	return u, &logs
}

// TestDamagedQueueFilesAreKept (issue 32.9): every journal found damaged
// is set aside under a number of its own (a second damage does not
// overwrite the first), counted and named in status; a ledger with garbage
// in it is set aside and logged as garbage, a ledger whose last line a
// power cut tore is logged as that and rewritten.
func TestDamagedQueueFilesAreKept(t *testing.T) {
	dir := t.TempDir()
	randomFile(t, dir, dumpName(0), 10)
	journal := filepath.Join(dir, JournalName)
	os.WriteFile(journal, []byte("first damage"), 0o600)
	startWithLogs(t, dir)
	os.WriteFile(journal, []byte("second damage"), 0o600)
	u, logs := startWithLogs(t, dir)
	for i, want := range []string{"first damage", "second damage"} {
		b, err := os.ReadFile(filepath.Join(dir, JournalName+".bad."+string(rune('1'+i))))
		if string(b) != want {
			t.Errorf("set-aside journal %d: %q %v, want %q", i+1, b, err, want)
		}
	}
	st := u.Status()
	if want := []string{JournalName + ".bad.1", JournalName + ".bad.2"}; st.SetAsideFiles != 2 || !slices.Equal(st.SetAside, want) {
		t.Errorf("status: %d set aside %v, want %v", st.SetAsideFiles, st.SetAside, want)
	}
	if !strings.Contains(logs.String(), "upload journal damaged; set aside") {
		t.Errorf("log:\n%s", logs)
	}

	// garbage in the middle of the ledger: set aside, logged as garbage;
	// the valid records stay (their dumps are not queued again)
	ledger := filepath.Join(dir, LedgerName)
	randomFile(t, dir, dumpName(1), 10)
	good := `{"file":"` + dumpName(0) + `","size":10,"crc32c":"x","key":"k"}` + "\n"
	garbage := good + "\x00\x01 not a record\n" + `{"file":"` + dumpName(1) + `","size":10,"crc32c":"y","key":"k"}` + "\n"
	os.WriteFile(ledger, []byte(garbage), 0o600)
	u, logs = startWithLogs(t, dir)
	if b, _ := os.ReadFile(ledger + ".bad.1"); string(b) != garbage {
		t.Errorf("garbage ledger not kept: %q", b)
	}
	l := logs.String()
	if !strings.Contains(l, "upload ledger holds garbage") || !strings.Contains(l, "first_bad_line=2") || strings.Contains(l, "power cut") {
		t.Errorf("log of a garbage ledger:\n%s", l)
	}
	if sent, dmg, err := readLedger(dir); err != nil || dmg.Bad != 0 || len(sent) != 2 {
		t.Errorf("rewritten ledger: %v %+v %v", sent, dmg, err)
	}
	if st := u.Status(); st.Queued != 0 || st.SetAsideFiles != 3 {
		t.Errorf("after the garbage ledger: %d queued, %d set aside", st.Queued, st.SetAsideFiles)
	}

	// a last line torn by a power cut: said so, rewritten, nothing set aside
	os.WriteFile(ledger, []byte(good+`{"file":"`+dumpName(1)+`","si`), 0o600)
	u, logs = startWithLogs(t, dir)
	if l := logs.String(); !strings.Contains(l, "last line was torn (a power cut") || strings.Contains(l, "garbage") {
		t.Errorf("log of a torn ledger:\n%s", l)
	}
	if st := u.Status(); st.SetAsideFiles != 3 || st.Queued != 1 {
		t.Errorf("after the torn ledger: %d set aside, %d queued (the torn record's dump)", st.SetAsideFiles, st.Queued)
	}
	if sent, dmg, _ := readLedger(dir); dmg.Bad != 0 || len(sent) != 1 {
		t.Errorf("ledger after the torn line: %v %+v", sent, dmg)
	}
}

// TestQueueFilesFollowTheDumpsMode (issue 32.8): the journal and the
// ledger get Options.FileMode (the recorder's dump_mode, 0640 by default),
// whatever the umask, a ledger an older version left 0644 too, and the
// Parquet files' waiting directory the matching search bits.
func TestQueueFilesFollowTheDumpsMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	for _, c := range []struct{ mode, want os.FileMode }{{0, 0o640}, {0o600, 0o600}} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, LedgerName), nil, 0o644) // an older version's
		o := testOptions(srv, "fleet")
		o.Dir, o.FileMode, o.Parquet = dir, c.mode, true
		var tmpMode atomic.Uint32
		u, err := New(o, func(path, out string) ([]Converted, error) {
			st, err := os.Stat(filepath.Dir(out))
			if err != nil {
				return nil, err
			}
			tmpMode.Store(uint32(st.Mode().Perm()))
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Start(); err != nil {
			t.Fatal(err)
		}
		u.Enqueue(randomFile(t, dir, dumpName(0), 100))
		waitUntil(t, "the upload", func() bool { return u.Status().Uploaded == 1 })
		u.Stop()
		for _, n := range []string{JournalName, LedgerName} {
			if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Mode().Perm() != c.want {
				t.Errorf("mode %04o: %s is %v (%v), want %04o", c.mode, n, st.Mode(), err, c.want)
			}
		}
		if got := os.FileMode(tmpMode.Load()); got != dump.DirMode(c.want) {
			t.Errorf("mode %04o: the Parquet files' directory is %04o, want %04o", c.mode, got, dump.DirMode(c.want))
		}
	}
}
