package shm

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// buildCProducer compiles testdata/cproducer.c against include/edr_shm.h
// with the system C compiler, as C99 with every warning an error.
func buildCProducer(t testing.TB) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("needs a C compiler (cc): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "cproducer")
	out, err := exec.Command(cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
		"-Iinclude", "-o", bin, "testdata/cproducer.c").CombinedOutput()
	if err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

func TestCHeaderMatchesLayout(t *testing.T) {
	src, err := os.ReadFile("include/edr_shm.h")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^#define (EDR_SHM_[A-Z_]+) (.+)$`).FindAllStringSubmatch(string(src), -1) {
		defs[m[1]] = m[2]
	}
	want := map[string]int{
		"VERSION": Version, "HEADER_SIZE": HeaderSize, "RECORD_HEADER_SIZE": RecordHeaderSize,
		"RECORD_ALIGN": RecordAlign, "MIN_CAPACITY": MinCapacity, "MAX_NAME_LEN": MaxNameLen,
		"MAX_TYPE_LEN": MaxTypeLen, "MAX_CHANNEL_LEN": MaxChannelLen,
		"OFF_MAGIC": offMagic, "OFF_VERSION": offVersion, "OFF_HEADER_SIZE": offHeaderSize,
		"OFF_TOTAL_SIZE": offTotalSize, "OFF_CAPACITY": offCapacity, "OFF_MAX_PAYLOAD": offMaxPayload,
		"OFF_FLAGS": offFlags, "OFF_PID": offPID, "OFF_UID": offUID, "OFF_START_NS": offStartNs,
		"OFF_HEARTBEAT_PERIOD": offHeartbeatPeriod, "OFF_NAME_LEN": offNameLen, "OFF_TYPE_LEN": offTypeLen,
		"OFF_CHANNEL_LEN": offChannelLen, "OFF_NAME": offName, "OFF_TYPE": offType, "OFF_CHANNEL": offChannel,
		"OFF_WRITE_CURSOR": offWriteCursor, "OFF_TAIL_CURSOR": offTailCursor, "OFF_NEXT_SEQ": offNextSeq,
		"OFF_OVERSIZE": offOversize, "OFF_HEARTBEAT_NS": offHeartbeatNs, "OFF_STATE": offState,
		"OFF_WAITERS": offWaiters, "KIND_MESSAGE": KindMessage, "KIND_PADDING": KindPadding,
		"STATE_LIVE": StateLive, "STATE_CLOSED": StateClosed, "MAX_ESCAPED_NAME": maxEscapedName, "TAIL_SLACK": tailSlack,
		"VERSION_UNTYPED": VersionUntyped, "MAX_ENCODING_LEN": MaxEncodingLen, "OFF_ENCODING_LEN": offEncodingLen,
		"OFF_SCHEMA_ENCODING_LEN": offSchemaEncLen, "OFF_SCHEMA_LEN": offSchemaLen, "OFF_ENCODING": offEncoding,
		"OFF_SCHEMA_ENCODING": offSchemaEncoding,
		"OFF_WAKE_CAPS":       offWakeCaps, "OFF_DOORBELL_INO": offDoorbellIno, "OFF_BELL_SLOT": offBellSlot,
		"DOORBELL_SIZE": DoorbellSize, "DOORBELL_VERSION": DoorbellVersion, "DOORBELL_SLOTS": DoorbellSlots,
		"DOORBELL_OFF_RINGS": offBellRings, "DOORBELL_OFF_HINTS": offBellHints, "WAKE_DOORBELL": WakeDoorbell,
		"WAIT_CURSOR": WaitCursor, "WAIT_DOORBELL": WaitDoorbell, "PID_MAX_LIMIT": pidMaxLimit,
	}
	if defs["EDR_SHM_MAX_SCHEMA_SIZE"] != "(4u << 20)" || MaxSchemaSize != 4<<20 {
		t.Errorf("EDR_SHM_MAX_SCHEMA_SIZE = %s, Go has %d", defs["EDR_SHM_MAX_SCHEMA_SIZE"], MaxSchemaSize)
	}
	if defs["EDR_SHM_DOORBELL_NAME"] != `"`+DoorbellName+`"` {
		t.Errorf("EDR_SHM_DOORBELL_NAME = %s, Go has %q", defs["EDR_SHM_DOORBELL_NAME"], DoorbellName)
	}
	for k, v := range want {
		got, err := strconv.Atoi(defs["EDR_SHM_"+k])
		if err != nil || got != v {
			t.Errorf("EDR_SHM_%s = %q, Go has %d", k, defs["EDR_SHM_"+k], v)
		}
	}
	if defs["EDR_SHM_MAX_CAPACITY"] != "(1u << 30)" || MaxCapacity != 1<<30 {
		t.Errorf("EDR_SHM_MAX_CAPACITY = %s, Go has %d", defs["EDR_SHM_MAX_CAPACITY"], MaxCapacity)
	}
}

// TestCFileNamesMatchGo: the C header names segment files as Go does. One
// run of the C program for every case: under qemu-user each fork of the
// emulated test binary risks qemu's fork deadlock (docs/arm.md).
func TestCFileNamesMatchGo(t *testing.T) {
	bin := buildCProducer(t)
	cases := [][2]string{
		{"vehicle/speed", ""}, {"vehicle/speed", "front"}, {"../../etc/passwd", ".."},
		{".hidden", "x"}, {"a~b", "c d"}, {strings.Repeat("é", 128), "ch"}, {strings.Repeat("x", 250), ""},
	}
	args := []string{"name"}
	for _, tc := range cases {
		args = append(args, tc[0], tc[1])
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("C printed %d names for %d cases:\n%s", len(lines), len(cases), out)
	}
	for i, tc := range cases {
		if got, want := lines[i], SegmentFileName(tc[0], tc[1]); got != want {
			t.Errorf("C names %q~%q %q, Go %q", tc[0], tc[1], got, want)
		}
	}
}

// runCProducer starts the C test producer, waits until its segment exists,
// then lets it publish count messages and waits for it to exit: mode "pub"
// publishes with edr_shm_publish, "reserve" writes in place with
// edr_shm_reserve and edr_shm_commit.
func runCProducer(t testing.TB, bin, mode, dir, name string, count, maxLen, capacity int, beforeGo func()) {
	t.Helper()
	cmd := exec.Command(bin, mode, dir, name, "", strconv.Itoa(count), strconv.Itoa(maxLen), strconv.Itoa(capacity))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("C producer: %q %v: %s", line, err, stderr.String())
	}
	beforeGo()
	stdin.Write([]byte("go\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("C producer: %v: %s", err, stderr.String())
	}
}

// TestCProducerEveryMessageBitExactInOrder: a C program built from
// include/edr_shm.h publishes into a ring large enough for all of it; the Go
// consumer must receive every message, bit-exact, in order, and see the
// topic go offline when the program closes the segment. The same with the
// messages written in place (edr_shm_reserve, edr_shm_commit; dropped
// reservations between them).
func TestCProducerEveryMessageBitExactInOrder(t *testing.T) {
	bin := buildCProducer(t)
	for _, mode := range []string{"pub", "reserve"} {
		t.Run(mode, func(t *testing.T) { cProducerBitExact(t, bin, mode) })
	}
}

func cProducerBitExact(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	const n, maxLen = 20_000, 200
	var id ingest.TopicID
	runCProducer(t, bin, mode, dir, "c/topic", n, maxLen, 4<<20, func() {
		id = waitTopic(t, sink, "c/topic", "")
		// The C producer rings the doorbell the consumer listens to.
		b, err := os.ReadFile(filepath.Join(dir, SegmentFileName("c/topic", "")))
		fi, ferr := os.Stat(filepath.Join(dir, DoorbellName))
		if err != nil || ferr != nil {
			t.Fatalf("segment %v, doorbell %v", err, ferr)
		}
		if caps, ino := getU32(b[offWakeCaps:]), getU64(b[offDoorbellIno:]); caps != WakeDoorbell || ino != inode(fi) {
			t.Errorf("wake_caps %d, doorbell_ino %d; want %d and the doorbell's inode %d", caps, ino, WakeDoorbell, inode(fi))
		}
	})
	sink.waitFor(t, "offline after close", func() bool { return !sink.isOnline(id) })
	msgs := sink.messages(id)
	if len(msgs) != n {
		t.Fatalf("received %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if got, err := checkPayload(m.payload, maxLen); err != nil || got != uint64(i) || m.gen != int64(i) {
			t.Fatalf("message %d: index %d gen %d: %v", i, got, m.gen, err)
		}
	}
	if typ := sink.topics[id].Type.Schema.Name; typ != "test/Checkable" {
		t.Errorf("type %q", typ)
	}
}

// TestCProducerMillionLappingCountsEveryGap: 10^6 messages into a 256 KiB
// ring as fast as C can go: each message the consumer hands on is intact
// and in order, and received + lost = 10^6 exactly.
//
// The same with the messages written in place (edr_shm_reserve,
// edr_shm_commit, every seventh reservation dropped): nothing of a dropped
// reservation arrives.
func TestCProducerMillionLappingCountsEveryGap(t *testing.T) {
	if testing.Short() {
		t.Skip("10^6 messages")
	}
	bin := buildCProducer(t)
	for _, mode := range []string{"pub", "reserve"} {
		t.Run(mode, func(t *testing.T) { cProducerLapping(t, bin, mode) })
	}
}

func cProducerLapping(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	const n, maxLen = 1_000_000, 256
	sink := &checkSink{maxLen: maxLen}
	c := startConsumer(t, dir, sink, ConsumerOptions{})
	runCProducer(t, bin, mode, dir, "c/fast", n, maxLen, 256<<10, func() {
		newRecSink().waitFor(t, "discovery", sink.discovery.Load)
	})
	newRecSink().waitFor(t, "offline", sink.offline.Load)
	if b := sink.bad.Load(); b != nil {
		t.Fatal(*b)
	}
	st := c.Stats()
	if st.Messages+st.Lost != n || sink.last.Load() != n-1 {
		t.Fatalf("received %d + lost %d != %d (last %d)", st.Messages, st.Lost, n, sink.last.Load())
	}
	t.Logf("received %d, lost %d of %d", st.Messages, st.Lost, n)
}

// TestCHeaderWorksFromCpp: C++ code on the ECU includes the same header.
func TestCHeaderWorksFromCpp(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skipf("needs a C++ compiler (c++): %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.cpp")
	os.WriteFile(src, []byte(`#include "edr_shm.h"
int main(int argc, char **argv) {
	edr_shm_producer p;
	edr_shm_options o = EDR_SHM_OPTIONS_INIT;
	o.name = "from/cpp";
	if (argc != 2 || edr_shm_create(&p, argv[1], &o) != 0) return 1;
	for (int i = 0; i < 3; i++) edr_shm_publish(&p, i, "c++", 3);
	return 0; /* exits without closing: the consumer sees a live segment */
}
`), 0o600)
	bin := filepath.Join(dir, "p")
	if out, err := exec.Command(cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-Iinclude", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("c++: %v\n%s", err, out)
	}
	segs := t.TempDir()
	if out, err := exec.Command(bin, segs).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	sink := newRecSink()
	st, err := DrainFile(filepath.Join(segs, SegmentFileName("from/cpp", "")), sink, ConsumerOptions{})
	if err != nil || st.Messages != 3 {
		t.Fatalf("got %+v, %v; want 3 messages", st, err)
	}
}
