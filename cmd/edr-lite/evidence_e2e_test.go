package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/evidence"
)

// opensslKeys makes an Ed25519 key pair with openssl in dir: NAME.pem
// (private, mode 0600) and NAME.pub.
func opensslKeys(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skipf("needs openssl: %v", err)
	}
	priv, pub = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub")
	for _, args := range [][]string{{"genpkey", "-algorithm", "ed25519", "-out", priv}, {"pkey", "-in", priv, "-pubout", "-out", pub}} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	os.Chmod(priv, 0o600)
	return priv, pub
}

var (
	signedDemoOnce sync.Once
	signedDemo     struct {
		path, priv, pub, err string
	}
)

// signedDemoDump runs "edr-lite demo --sign-key" once per test run with a
// key openssl made; tests must not change the dump.
func signedDemoDump(t *testing.T) (path, priv, pub string) {
	t.Helper()
	bin := edrBinary(t)
	signedDemoOnce.Do(func() {
		dir := filepath.Join(filepath.Dir(bin), "signed-demo")
		os.MkdirAll(dir, 0o755)
		priv, pub := opensslKeys(t, dir, "vehicle")
		code, out, errs := runBin(t, "demo", "--dir", filepath.Join(dir, "dumps"), "--duration", "4s", "--sign-key", priv)
		dumps, _ := filepath.Glob(filepath.Join(dir, "dumps", "*.pack"))
		if code != 0 || len(dumps) != 1 || !strings.Contains(out, "signature:  signed by ") {
			signedDemo.err = fmt.Sprintf("demo --sign-key: exit %d, dumps %v\n%s\n%s", code, dumps, out, errs)
			return
		}
		signedDemo.path, signedDemo.priv, signedDemo.pub = dumps[0], priv, pub
	})
	if signedDemo.err != "" {
		t.Fatal(signedDemo.err)
	}
	return signedDemo.path, signedDemo.priv, signedDemo.pub
}

// TestE2ESignedDemoDump: the signed demo dump verifies with its public key
// (openssl's); info shows who signed it and whether it holds; every single
// byte changed in a sample of 1000 offsets, a cut, an appended byte, a
// key that did not sign it, and the dump signed again by another key each
// fail with a reason (a seal swapped in from another dump: pack's
// TestSealDetectsChanges).
func TestE2ESignedDemoDump(t *testing.T) {
	path, _, pub := signedDemoDump(t)
	code, out, errs := runBin(t, "verify", "--key", pub, path)
	if code != 0 || !strings.Contains(out, "signature: signed by ") || !strings.Contains(out, ", valid") {
		t.Fatalf("verify --key: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runBin(t, "info", "--key", pub, path)
	if code != 0 || !regexpMatch(`signature:  signed by [0-9a-f]{16} \(chain [0-9a-f]{32} #1\), valid`, out) {
		t.Fatalf("info --key: exit %d\n%s", code, out)
	}
	code, out, _ = runBin(t, "info", "--json", path)
	var js struct {
		Signature struct {
			Status string `json:"status"`
			KeyID  string `json:"key_id"`
		} `json:"signature"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || js.Signature.Status != "not checked" || js.Signature.KeyID == "" {
		t.Fatalf("info --json without --key: exit %d %v\n%s", code, err, out)
	}

	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cases []string
	reasons := map[string]string{}
	add := func(name string, b []byte, reason string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, p)
		reasons[p] = reason
	}
	rng := rand.New(rand.NewPCG(37, uint64(len(good))))
	offs := map[int]bool{}
	for i := 0; len(offs) < 1000; i++ {
		var off int
		switch i % 4 { // the header, the file's end (seal, index, trailer), anywhere
		case 0:
			off = rng.IntN(64)
		case 1:
			off = len(good) - 1 - rng.IntN(min(len(good), 4096))
		default:
			off = rng.IntN(len(good))
		}
		offs[off] = true
	}
	for off := range offs {
		b := bytes.Clone(good)
		b[off] ^= byte(1 + rng.IntN(255))
		add(fmt.Sprintf("flip-%07d.pack", off), b, "")
	}
	add("cut.pack", good[:len(good)-1], "shorter than what was signed")
	add("cut-early.pack", good[:len(good)/2], "no signature found")
	add("appended.pack", append(bytes.Clone(good), 0), "1 byte longer")

	sort.Strings(cases)
	for from := 0; from < len(cases); from += 100 {
		batch := cases[from:min(from+100, len(cases))]
		code, out, errs := runBin(t, append([]string{"verify", "--key", pub}, batch...)...)
		if code != 1 {
			t.Fatalf("verify of %d changed files: exit %d\n%s", len(batch), code, errs)
		}
		// every file gets its signature line, failing with a reason
		for _, p := range batch {
			i := strings.Index(out, p+": ")
			if i < 0 {
				t.Fatalf("%s: not reported\n%s", p, out)
			}
			rest := out[i:]
			if j := strings.Index(rest[1:], "\n"+dir); j >= 0 {
				rest = rest[:j+1]
			}
			m := regexpFind(`SIGNATURE: (.*)`, rest)
			if m == "" || strings.HasSuffix(m, ", valid") {
				t.Fatalf("%s: no failing signature line:\n%s", p, rest)
			}
			if want := reasons[p]; want != "" && !strings.Contains(m, want) {
				t.Fatalf("%s: %q, want %q", p, m, want)
			}
		}
	}

	// A dump signed by another key: unknown to the verifier.
	priv2, pub2 := opensslKeys(t, dir, "other")
	code, out, _ = runBin(t, "verify", "--key", pub2, path)
	if code != 1 || !strings.Contains(out, "which is not among the 1 key(s) given") {
		t.Fatalf("another key: exit %d\n%s", code, out)
	}
	// The dump signed again with another key (its content unchanged): the
	// vehicle's key does not vouch for it.
	resigned := filepath.Join(dir, "resigned.pack")
	if code, _, errs := runBin(t, "compress", path, "-o", resigned, "--sign-key", priv2); code != 0 {
		t.Fatalf("compress --sign-key: exit %d\n%s", code, errs)
	}
	code, out, _ = runBin(t, "verify", "--key", pub, resigned)
	if code != 1 || !strings.Contains(out, "SIGNATURE: signed by ") || !strings.Contains(out, "which is not among the 1 key(s) given") {
		t.Fatalf("signed again by another key: exit %d\n%s", code, out)
	}
	// Both keys (a keys file): valid.
	a, _ := os.ReadFile(pub)
	b, _ := os.ReadFile(pub2)
	ring := filepath.Join(dir, "fleet.pem")
	os.WriteFile(ring, append(append([]byte("# vehicle 42\n"), a...), b...), 0o644)
	if code, out, _ := runBin(t, "verify", "--key", ring, path); code != 0 {
		t.Fatalf("keys file: exit %d\n%s", code, out)
	}
	// A private key given as --key is refused, naming what to give.
	if code, _, errs := runBin(t, "verify", "--key", signedDemo.priv, path); code != 1 || !strings.Contains(errs, "give its public key") {
		t.Fatalf("private key as --key: exit %d\n%s", code, errs)
	}
}

// TestE2EChainVerify: 20 dumps of a signing recorder (rotation keeping
// 16) verify as a chain with nothing to report; a deleted, a replaced, a
// reordered (two swapped) and an injected dump are each reported by verify
// --chain, alone, the gap named; rotation alone reports nothing, and a
// rotated dump put back is accounted with a note.
func TestE2EChainVerify(t *testing.T) {
	demoPath, _, demoPub := signedDemoDump(t) // another chain, the same kind of key
	keyDir := t.TempDir()
	priv, pub := opensslKeys(t, keyDir, "recorder")
	cfg := `[recorder]
dump_dir = "$DIR/dumps"
pre = "200ms"
post = "0s"
guard = "0s"
max_dumps_per_minute = 0
max_manual_dumps_per_minute = 0
[rotation]
max_files = 16
[[source.shm]]
dir = "$DIR/shm"
[control]
socket = "$DIR/edr.sock"
[evidence]
sign_key = "` + priv + `"
`
	d := startDaemon(t, cfg, nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	publishUntil(t, filepath.Join(d.dir, "shm"), "vehicle/speed", stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	dumps := filepath.Join(d.dir, "dumps")
	var first string // the first dump, saved before rotation removes it
	for i := range 20 {
		if code, out, errs := runBin(t, "trigger", "--socket", d.sock, "--reason", fmt.Sprint("brake-", i)); code != 0 {
			t.Fatalf("trigger %d: exit %d\n%s%s", i, code, out, errs)
		}
		if i == 0 {
			f, _ := filepath.Glob(filepath.Join(dumps, "*.pack"))
			if len(f) != 1 {
				t.Fatalf("after the first trigger: %v", f)
			}
			first = filepath.Join(t.TempDir(), filepath.Base(f[0]))
			copyFile(t, f[0], first)
		}
	}
	keys := filepath.Join(keyDir, "keys.pem")
	a, _ := os.ReadFile(pub)
	b, _ := os.ReadFile(demoPub)
	os.WriteFile(keys, append(a, b...), 0o644)

	copyDir := func() string {
		to := filepath.Join(t.TempDir(), "dumps")
		out, err := exec.Command("cp", "-a", dumps, to).CombinedOutput()
		if err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return to
	}
	code, out, errs := runBin(t, "verify", "--key", keys, "--chain", dumps)
	if code != 0 || !strings.Contains(out, ": ok") || !strings.Contains(out, "16 dumps in place, #5-#20, 4 rotated") {
		t.Fatalf("rotation alone: exit %d\n%s%s", code, out, errs)
	}
	// A rotated dump back in place (restored from a copy, or its removal
	// failed): accounted, with a note, not reported (the ledger lists it as
	// rotated, below its floor).
	restored := copyDir()
	copyFile(t, first, filepath.Join(restored, filepath.Base(first)))
	code, out, errs = runBin(t, "verify", "--key", keys, "--chain", restored)
	if code != 0 || !strings.Contains(out, "16 dumps in place, #5-#20, 4 rotated") ||
		!strings.Contains(out, "  note: dump #1 "+filepath.Base(first)+" is listed as rotated and is still here") {
		t.Fatalf("a rotated dump restored: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBin(t, "verify", "--chain", dumps); code != 2 || !strings.Contains(errs, "needs --key") {
		t.Fatalf("--chain without --key: exit %d %s", code, errs)
	}
	names, _ := filepath.Glob(filepath.Join(dumps, "*.pack"))
	sort.Strings(names) // by trigger time: the chain's order here
	if len(names) != 16 {
		t.Fatalf("%d dumps", len(names))
	}
	in := func(dir string, i int) string { return filepath.Join(dir, filepath.Base(names[i])) }
	cases := []struct {
		name  string
		edit  func(dir string)
		want  []string
		lines int
	}{
		{"deleted", func(dir string) { os.Remove(in(dir, 7)) }, []string{
			"MISSING: dump #12 " + filepath.Base(names[7]) + " is gone (after #11 " + filepath.Base(names[6]) + ", before #13 " + filepath.Base(names[8]) + ")",
			"not list it as rotated: deleted"}, 1},
		{"replaced", func(dir string) { copyFile(t, demoPath, in(dir, 3)) }, []string{
			"REPLACED: " + filepath.Base(names[3]) + " is not dump #8 of the chain: a dump of another chain"}, 1},
		{"reordered", func(dir string) {
			tmp := in(dir, 10) + ".x"
			os.Rename(in(dir, 10), tmp)
			os.Rename(in(dir, 11), in(dir, 10))
			os.Rename(tmp, in(dir, 11))
		}, []string{"REORDERED: " + filepath.Base(names[10]) + " holds dump #16 (recorded as " + filepath.Base(names[11]) + "), not #15",
			"REORDERED: " + filepath.Base(names[11]) + " holds dump #15"}, 2},
		{"injected", func(dir string) {
			copyFile(t, demoPath, filepath.Join(dir, "20261201T000000.000000000Z_brake_99.pack"))
		}, []string{
			"INJECTED: 20261201T000000.000000000Z_brake_99.pack is not in the chain: a dump of another chain"}, 1},
		{"ledger deleted", func(dir string) { os.Remove(filepath.Join(dir, evidence.LedgerName)) }, []string{
			"16 dumps in place, #5-#20: 1 problem(s)",
			"LEDGER: no chain ledger: a rotated dump cannot be told from a deleted one",
			"note: the chain's dumps #1-#4 are not here (rotated or deleted: no ledger to tell)"}, 2},
		{"ledger damaged", func(dir string) { // one finding: the ledger is there, and cannot be trusted
			f, _ := os.OpenFile(filepath.Join(dir, evidence.LedgerName), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("garbage\n")
			f.Close()
		}, []string{"16 dumps in place, #5-#20: 1 problem(s)",
			"LEDGER: the chain ledger cannot be trusted (", "/" + evidence.LedgerName + ": chain ledger: ",
			"): a rotated dump cannot be told from a deleted one"}, 2},
		{"empty directory", func(dir string) {
			os.RemoveAll(dir)
			os.Mkdir(dir, 0o755)
		}, []string{": no chain: 0 dumps in place: 1 problem(s)", "LEDGER: no chain ledger"}, 1},
	}
	for _, tc := range cases {
		dir := copyDir()
		tc.edit(dir)
		code, out, errs := runBin(t, "verify", "--key", keys, "--chain", dir)
		if code != 1 {
			t.Errorf("%s: exit %d\n%s%s", tc.name, code, out, errs)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, out)
			}
		}
		if rePackagePrefix.MatchString(out) || tc.name == "ledger damaged" && strings.Contains(out, "no chain ledger") {
			t.Errorf("%s: a package prefix, or a ledger that is there said to be absent:\n%s", tc.name, out)
		}
		if n := strings.Count(out, "\n  "); n != tc.lines {
			t.Errorf("%s: %d lines reported, want %d:\n%s", tc.name, n, tc.lines, out)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// regexpFind returns the first group of re's first match in s ("" none).
func regexpFind(re, s string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestE2EConfigCheckSigningKey: config check refuses a signing key every
// local user can read (run warns and signs), refuses a key that is not an
// Ed25519 private key naming the key, and warns when signing is off.
func TestE2EConfigCheckSigningKey(t *testing.T) {
	keyDir := t.TempDir()
	priv, pub := opensslKeys(t, keyDir, "k")
	body := func(key string) string {
		s := "[recorder]\ndump_dir = \"$DIR/dumps\"\n"
		if key != "" {
			s += "[evidence]\nsign_key = \"" + key + "\"\n"
		}
		return s
	}
	path, _ := writeConfig(t, body(""))
	code, out, errs := runBin(t, "config", "check", path)
	if code != 0 || !strings.Contains(errs, "recorder.dump_dir: warning: signing is off") || !strings.Contains(out, "1 warning") {
		t.Fatalf("signing off: exit %d\n%s%s", code, out, errs)
	}
	path, _ = writeConfig(t, body(priv))
	if code, out, errs := runBin(t, "config", "check", path); code != 0 || strings.Contains(errs, "signing is off") {
		t.Fatalf("0600 key: exit %d\n%s%s", code, out, errs)
	}
	os.Chmod(priv, 0o644)
	code, _, errs = runBin(t, "config", "check", path)
	if code != 1 || !strings.Contains(errs, "evidence.sign_key: the signing key "+priv+" can be read by every local user (mode 0644)") {
		t.Fatalf("0644 key: exit %d\n%s", code, errs)
	}
	path, _ = writeConfig(t, body(pub))
	code, _, errs = runBin(t, "config", "check", path)
	if code != 1 || !strings.Contains(errs, "evidence.sign_key: "+pub+": bad key: a public key, not a private one") {
		t.Fatalf("public key as sign_key: exit %d\n%s", code, errs)
	}
}

// TestE2EDerivedDumpsSayWhatTheyAre: recover, filter, split, merge,
// compress and export write files the vehicle's key does not sign; each
// records its sources' SHA-256 and signature (checked with --key), and
// with --sign-key verifies with the operator's key.
func TestE2EDerivedDumpsSayWhatTheyAre(t *testing.T) {
	path, _, vehiclePub := signedDemoDump(t)
	dir := t.TempDir()
	opPriv, opPub := opensslKeys(t, dir, "operator")
	sum, err := exec.Command("sha256sum", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	srcSum := strings.Fields(string(sum))[0]
	stamp := []string{"--key", vehiclePub, "--sign-key", opPriv}
	out := func(name string) string { return filepath.Join(dir, name) }
	verbs := []struct {
		args []string
		out  string
	}{
		{append([]string{"filter", path, "-o", out("cut.pack"), "--topics", "vehicle/*"}, stamp...), out("cut.pack")},
		{append([]string{"split", path, "-o", out("part.mcap"), "--duration", "2s"}, stamp...), out("part_0001.mcap")},
		{append([]string{"merge", path, "-o", out("merged.mcap")}, stamp...), out("merged.mcap")},
		{append([]string{"compress", path, "-o", out("small.pack")}, stamp...), out("small.pack")},
		{append([]string{"export", "--format", "mcap", path, "-o", out("export.mcap")}, stamp...), out("export.mcap")},
		{append([]string{"recover", path, "-o", out("salvaged.pack")}, stamp...), out("salvaged.pack")},
	}
	for _, v := range verbs {
		if code, o, errs := runBin(t, v.args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", v.args, code, o, errs)
		}
		if code, o, _ := runBin(t, "verify", "--key", vehiclePub, v.out); code != 1 || !strings.Contains(o, "which is not among the 1 key(s) given") {
			t.Errorf("%s verified with the vehicle's key: exit %d\n%s", v.out, code, o)
		}
		if code, o, _ := runBin(t, "verify", "--key", opPub, v.out); code != 0 || !strings.Contains(o, ", valid") {
			t.Errorf("%s does not verify with the operator's key: exit %d\n%s", v.out, code, o)
		}
		code, o, _ := runBin(t, "info", "--json", v.out)
		var js struct {
			Provenance struct {
				MadeBy   string `json:"made_by"`
				SignedBy string `json:"signed_by"`
				Sources  []struct {
					File, SHA256, Signature string
					KeyID                   string `json:"key_id"`
				} `json:"sources"`
			} `json:"provenance"`
		}
		if err := json.Unmarshal([]byte(o), &js); code != 0 || err != nil {
			t.Fatalf("info --json %s: exit %d %v\n%s", v.out, code, err, o)
		}
		p := js.Provenance
		if p.MadeBy != "edr-lite "+v.args[0] || p.SignedBy == "" || len(p.Sources) != 1 || p.Sources[0].SHA256 != srcSum ||
			p.Sources[0].Signature != "valid" || p.Sources[0].File != filepath.Base(path) {
			t.Errorf("%s: provenance %+v (source sha256 %s)", v.out, p, srcSum)
		}
	}
	// Without keys the source's signature is "not checked"; a derived
	// file never carries its source's seal.
	code, o, errs := runBin(t, "filter", path, "-o", out("plain.mcap"), "--topics", "vehicle/*")
	if code != 0 {
		t.Fatalf("filter: %d %s%s", code, o, errs)
	}
	code, o, _ = runBin(t, "info", out("plain.mcap"))
	if code != 0 || !strings.Contains(o, "signature:  unsigned") || !strings.Contains(o, "provenance: made by edr-lite filter from "+filepath.Base(path)+" (sha256 "+srcSum[:16]+", signed by ") ||
		!strings.Contains(o, ", not checked)") {
		t.Errorf("unsigned cut:\n%s", o)
	}
	code, o, _ = runBin(t, "list", "metadata", out("plain.mcap"))
	if code != 0 || !strings.Contains(o, "edr.provenance") || strings.Contains(o, "edr.seal") {
		t.Errorf("the cut carries its source's seal:\n%s", o)
	}
}

// TestE2EJSONLStamps: a signed MCAP cut exports to JSON lines without its
// seal and provenance (true of its bytes only), and the export imports to
// MCAP when OUT ends in .mcap (not a pack file named .mcap): the same
// messages and trigger, unsigned, with no provenance claiming a signer. An
// export that still carries them (an older one) imports without them, a
// warning naming both.
func TestE2EJSONLStamps(t *testing.T) {
	dump, priv, _ := signedDemoDump(t)
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.mcap")
	if code, _, errs := runBin(t, "filter", dump, "--format", "mcap", "--topics", "vehicle/speed", "--sign-key", priv, "-o", cut); code != 0 {
		t.Fatalf("filter: exit %d %s", code, errs)
	}
	js := filepath.Join(dir, "cut.jsonl")
	if code, _, errs := runBin(t, "export", "--format", "jsonl", cut, "-o", js); code != 0 {
		t.Fatalf("export: exit %d %s", code, errs)
	}
	b, _ := os.ReadFile(js)
	hdr, _, _ := strings.Cut(string(b), "\n")
	if strings.Contains(hdr, "edr.provenance") || strings.Contains(hdr, "edr.seal") {
		t.Errorf("the export's header carries the input's stamp: %.300s", hdr)
	}
	back := filepath.Join(dir, "back.mcap")
	code, out, errs := runBin(t, "import", "--format", "jsonl", js, "-o", back)
	if code != 0 || errs != "" {
		t.Fatalf("import: exit %d %s %s", code, out, errs)
	}
	if m, _ := os.ReadFile(back); !bytes.HasPrefix(m, []byte("\x89MCAP0\r\n")) {
		t.Fatalf("import -o back.mcap wrote no MCAP file: %.8q", m)
	}
	_, a, _ := runBin(t, "cat", cut)
	_, c, _ := runBin(t, "cat", back)
	if a != c || a == "" {
		t.Errorf("cat of the import differs from the cut's")
	}
	_, info, _ := runBin(t, "info", back)
	if !strings.Contains(info, "signature:  unsigned") || strings.Contains(info, "provenance:") || !strings.Contains(info, "hard-brake") {
		t.Errorf("info of the import:\n%s", info)
	}
	old := filepath.Join(dir, "old.jsonl")
	stamped := strings.TrimSuffix(hdr, "}") + `,"metadata":{"edr.provenance":"e30=","edr.seal":"e30="}}`
	os.WriteFile(old, []byte(stamped+strings.TrimPrefix(string(b), hdr)), 0o644)
	for _, name := range []string{"old.pack", "old.mcap"} {
		code, _, errs = runBin(t, "import", "--format", "jsonl", old, "-o", filepath.Join(dir, name))
		if code != 0 || !strings.Contains(errs, "warning: left out metadata edr.provenance, edr.seal") {
			t.Errorf("import of an export with stamps to %s: exit %d %s", name, code, errs)
		}
		if _, info, _ := runBin(t, "info", filepath.Join(dir, name)); strings.Contains(info, "provenance:") {
			t.Errorf("%s shows a provenance:\n%s", name, info)
		}
	}
}
