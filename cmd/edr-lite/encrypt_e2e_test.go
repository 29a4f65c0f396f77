package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/evidence/crypt"
)

// ageKeys makes an age identity file in dir and returns it and its
// recipient.
func ageKeys(t *testing.T, dir, name string) (identity, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	identity = filepath.Join(dir, name+".age-key")
	if err := os.WriteFile(identity, []byte("# "+name+"\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return identity, id.Recipient().String()
}

// TestE2EEncryptedDumps (issue 37 item 4): a recorder that signs and
// encrypts to a recipient writes age files it cannot read itself; every
// reading verb given --identity prints what it prints of the clear dump
// (the same names); without it, info shows only the size, the recipients
// and the chain ledger's place and exits 1, the other verbs fail saying
// what to give; upload-style copies keep the bytes encrypted; a wrong
// identity, a cut file and a garbage header fail, naming the file, within
// the hostile corpus' CPU time and memory bounds.
func TestE2EEncryptedDumps(t *testing.T) {
	keyDir := t.TempDir()
	priv, pub := opensslKeys(t, keyDir, "car")
	identity, recipient := ageKeys(t, keyDir, "investigator")
	cfg := `[recorder]
dump_dir = "$DIR/dumps"
pre = "300ms"
post = "0s"
guard = "0s"
max_dumps_per_minute = 0
max_manual_dumps_per_minute = 0
[[source.shm]]
dir = "$DIR/shm"
[control]
socket = "$DIR/edr.sock"
[evidence]
sign_key = "` + priv + `"
encrypt_to = ["` + recipient + `"]
`
	d := startDaemon(t, cfg, nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	publishUntil(t, filepath.Join(d.dir, "shm"), "vehicle/speed", stop, &wg)
	time.Sleep(400 * time.Millisecond)
	var paths []string
	for i := range 2 {
		code, out, errs := runBin(t, "trigger", "--socket", d.sock, "--reason", fmt.Sprint("enc-", i))
		if code != 0 {
			t.Fatalf("trigger: %d %s%s", code, out, errs)
		}
		paths = append(paths, strings.TrimSpace(out))
	}
	close(stop)
	wg.Wait()
	enc := paths[0]
	if !strings.HasSuffix(enc, ".pack.age") || !crypt.IsEncrypted(enc) {
		t.Fatalf("dump %s is not an age file", enc)
	}
	b, _ := os.ReadFile(enc)
	if bytes.Contains(b, []byte("vehicle/speed")) || bytes.Contains(b, []byte("EDRPACK")) {
		t.Fatal("the encrypted dump holds clear text")
	}
	// The clear dump, decrypted with the age library, named as the same dump.
	clearDir := t.TempDir()
	clear := filepath.Join(clearDir, strings.TrimSuffix(filepath.Base(enc), ".age"))
	ids, _ := crypt.ParseIdentities([]string{identity})
	var plain bytes.Buffer
	if _, err := crypt.Decrypt(enc, &plain, ids); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(clear, plain.Bytes(), 0o600)

	same := func(out, p string) string { return strings.ReplaceAll(out, p, "DUMP") }
	for _, args := range [][]string{{"info"}, {"info", "--json", "--key", pub}, {"verify", "--key", pub}, {"cat", "--jsonl"},
		{"list", "topics"}, {"list", "metadata"}, {"export", "--format", "jsonl", "-o", "-"}, {"report", "--format", "json", "-o", "-"}} {
		code, want, werrs := runBin(t, append(args, clear)...)
		gcode, got, gerrs := runBin(t, append(append(args, "--identity", identity), enc)...)
		if code != gcode || same(want, clear) != same(got, enc) {
			t.Errorf("%v: with --identity: exit %d\n%s%s\nclear: exit %d\n%s%s", args, gcode, got, gerrs, code, want, werrs)
		}
	}
	// The verbs that write a file: the same report, and the same messages
	// in what they write.
	for _, args := range [][]string{{"filter", "--topics", "vehicle/*"}, {"split", "--duration", "1s"}, {"merge"}, {"compress", "--compression", "zstd"},
		{"recover"}, {"export", "--format", "mcap"}} {
		outs := map[string]string{}
		for _, in := range []string{clear, enc} {
			od := t.TempDir()
			a := append(append([]string{args[0], in, "-o", filepath.Join(od, "out.pack")}, args[1:]...), "--identity", identity)
			if args[0] == "export" {
				a[3] = filepath.Join(od, "out.mcap")
			}
			code, out, errs := runBin(t, a...)
			if code != 0 {
				t.Fatalf("%v: exit %d\n%s%s", a, code, out, errs)
			}
			files, _ := filepath.Glob(filepath.Join(od, "*"))
			for _, f := range files {
				_, msgs, _ := runBin(t, "cat", "--jsonl", f)
				out += filepath.Base(f) + ":\n" + msgs
			}
			outs[in] = strings.ReplaceAll(strings.ReplaceAll(out, in, "DUMP"), od, "OUT")
		}
		if outs[clear] != outs[enc] {
			t.Errorf("%v: with --identity:\n%s\nclear:\n%s", args, outs[enc], outs[clear])
		}
	}
	for _, args := range [][]string{{"rules", "test", "--rules", "builtin:threshold", "--param", "threshold.topic=vehicle/speed", "--mode", "input-only"},
		{"replay", "-o", "discard", "--asfast"}} {
		code, want, werrs := runBin(t, append(args, clear)...)
		gcode, got, gerrs := runBin(t, append(append(args, "--identity", identity), enc)...)
		rate := regexp.MustCompile(` in [^ ]+ \(.*`) // replay's speed
		want, got = rate.ReplaceAllString(want, ""), rate.ReplaceAllString(got, "")
		if code != gcode || same(want, clear) != same(got, enc) || same(werrs, clear) != same(gerrs, enc) {
			t.Errorf("%v: with --identity: exit %d\n%s%s\nclear: exit %d\n%s%s", args, gcode, got, gerrs, code, want, werrs)
		}
	}
	if code, out, _ := runBin(t, "verify", "--key", pub, "--identity", identity, "--chain", filepath.Dir(enc)); code != 0 || !strings.Contains(out, "2 dumps in place") {
		t.Errorf("verify --chain of encrypted dumps: %d\n%s", code, out)
	}

	// Without the identity: what is safe, and a clear error.
	code, out, errs := runBin(t, "info", enc)
	if code != 1 || !strings.Contains(out, "encrypted at rest (age)") || !strings.Contains(out, "1 recipient(s): X25519") ||
		!strings.Contains(out, "lists it as #1 of chain") || strings.Contains(out, "vehicle/speed") || !strings.Contains(errs, "need --identity") {
		t.Errorf("info without identity: %d\n%s%s", code, out, errs)
	}
	for _, v := range [][]string{{"cat"}, {"verify"}, {"export", "--format", "jsonl", "-o", "-"}} {
		if code, _, errs := runBin(t, append(v, enc)...); code != 1 || !strings.Contains(errs, "is encrypted at rest (age): give --identity FILE") {
			t.Errorf("%v without identity: %d %s", v, code, errs)
		}
	}

	// Hostile: another identity, a cut file, a garbage header.
	other, _ := ageKeys(t, keyDir, "other")
	if code, _, errs := runBin(t, "info", "--identity", other, enc); code != 1 || !strings.Contains(errs, "no identity given matches") {
		t.Errorf("wrong identity: %d %s", code, errs)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.pack.age")
	os.WriteFile(cut, b[:len(b)-100], 0o600)
	junk := filepath.Join(dir, "junk.pack.age")
	os.WriteFile(junk, append([]byte("age-encryption.org/v1\n"), bytes.Repeat([]byte("x"), 8<<20)...), 0o600)
	for _, p := range []string{cut, junk} {
		for _, v := range [][]string{{"info"}, {"cat"}, {"verify"}} {
			r := runLimited(t, append(v, "--identity", identity, p)...) // CPU time and peak RSS as for the hostile corpus
			if r.code != 1 || !strings.Contains(r.stderr, p) || !strings.Contains(r.stderr, "cannot decrypt") {
				t.Errorf("%v %s: %d %s", v, p, r.code, r.stderr)
			}
			if r.cpu > hostileMaxTime || r.rss > hostileMaxRSS {
				t.Errorf("%v %s: %v of CPU, peak RSS %d MiB to fail (bounds %v, %d MiB)", v, p, r.cpu, r.rss>>20, hostileMaxTime, hostileMaxRSS>>20)
			}
		}
	}
}
