package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDocHexdump(t *testing.T) {
	data := []byte("EDRPACK\x00\x01\x00\x00\x00")
	f := func(doc string, wantErrs int) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "FORMAT.md")
		os.WriteFile(path, []byte(doc), 0o644)
		r := &spy{TB: t}
		CheckDocHexdump(r, path, data)
		if len(r.errs) != wantErrs {
			t.Errorf("%q: %d errors %v, want %d", doc, len(r.errs), r.errs, wantErrs)
		}
	}
	good := "# Format\n\n```hexdump\n# offset  bytes  field\n00000000  45 44 52 50 41 43 4b 00  magic\n...\n00000008  01 00  major 1\n0000000a  00 00\n```\n"
	f(good, 0)
	f(good+"```\n00000000  ff  not an example: no hexdump info string\n```\n", 0)
	f(strings.Replace(good, "01 00", "02 00", 1), 1)                           // other bytes
	f(strings.Replace(good, "0000000a", "0000000b", 1), 1)                     // other offset
	f(strings.Replace(good, "0000000a  00 00", "0000000b  00 00 00 00", 1), 1) // beyond the end
	f(strings.Replace(good, "0000000a  00 00", "0x0a  00 00", 1), 1)           // malformed line
	f(strings.Replace(good, "major 1", "major 1 (two spaces end the bytes)", 1), 0)
	f("# Format\n\nno examples\n", 1)
}
