package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/demo"
)

// TestCANFromConfig: a [[source.can]] candump table records the log's
// buses decoded by the DBC; status and /metrics give the accounting.
func TestCANFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	os.MkdirAll(filepath.Join(dir, "shm"), 0o700)
	writeFile(t, filepath.Join(dir, "vehicle.dbc"), demo.VehicleDBC)
	writeFile(t, filepath.Join(dir, "drive.log"), "(1796218342.000100) can0 101#ABC8FF3800000007\n"+
		"(1796218342.000200) can0 555#01\n(1796218342.000300) can0 101#00\n(1796218342.000400) can0 20000040#0000000000000000\n")
	cfg.Sources.CAN = []config.CANSource{{Candump: filepath.Join(dir, "drive.log"), DBC: filepath.Join(dir, "vehicle.dbc")}}
	if err := Check(cfg); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfg)
	waitFor(t, "the log's frames", func() bool {
		st := d.Status()
		return len(st.CAN) == 1 && st.CAN[0].Frames == 3 && st.CAN[0].ErrorFrames == 1
	})
	b := d.Status().CAN[0]
	if b.Bus != "can0" || b.Topic != "can/can0" || b.Messages["Brake"] != 1 || b.Short != 1 || b.Unknown != 1 ||
		b.BusOff != 1 || len(b.ShortIDs) != 1 || b.ShortIDs[0] != "101" || b.UnknownIDs[0] != "555" {
		t.Errorf("status %+v", b)
	}
	if !HTTPBuilt {
		return // the ECU build has no /metrics
	}
	body := httpGetDaemon(t, d, "/metrics")
	for _, want := range []string{`edr_can_frames_total{bus="can/can0",kind="data"} 3`, `edr_can_frames_total{bus="can/can0",kind="bus_off"} 1`,
		`edr_can_decoded_total{bus="can/can0",message="Brake"} 1`, `edr_can_undecodable_total{bus="can/can0",why="short"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestCANPerIDFromConfig: per_id gives each identifier a topic.
func TestCANPerIDFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	os.MkdirAll(filepath.Join(dir, "shm"), 0o700)
	writeFile(t, filepath.Join(dir, "drive.log"), "(1796218342.000100) can0 101#01\n(1796218342.000200) can0 18FEF100#02\n")
	cfg.Sources.CAN = []config.CANSource{{Candump: filepath.Join(dir, "drive.log"), PerID: true}}
	d := startDaemon(t, cfg)
	waitFor(t, "the log's frames", func() bool {
		st := d.Status()
		return len(st.CAN) == 1 && st.CAN[0].Frames == 2
	})
	names := map[string]bool{}
	for _, tp := range d.Status().Topics {
		names[tp.Name] = true
	}
	if !names["can/can0/0x101"] || !names["can/can0/0x18FEF100x"] || names["can/can0"] {
		t.Errorf("topics %v", names)
	}
}

// TestCANAccountingPerID: a dump of a per_id bus with a DBC carries, on
// each identifier's topic, what the DBC made of its frames in the dump
// (the dump transform); a bus without a DBC carries none.
func TestCANAccountingPerID(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	os.MkdirAll(filepath.Join(dir, "shm"), 0o700)
	writeFile(t, filepath.Join(dir, "vehicle.dbc"), demo.VehicleDBC)
	writeFile(t, filepath.Join(dir, "a.log"), "(1796218342.000100) can0 101#ABC8FF3800000007\n(1796218342.000200) can0 555#01\n"+
		"(1796218342.000300) can0 101#00\n(1796218342.000400) can0 555#02\n")
	writeFile(t, filepath.Join(dir, "b.log"), "(1796218342.000100) can9 101#ABC8FF3800000007\n")
	cfg.Sources.CAN = []config.CANSource{{Candump: filepath.Join(dir, "a.log"), DBC: filepath.Join(dir, "vehicle.dbc"), PerID: true},
		{Candump: filepath.Join(dir, "b.log")}}
	d := startDaemon(t, cfg)
	waitFor(t, "the logs' frames", func() bool {
		st := d.Status()
		return len(st.CAN) == 2 && st.CAN[0].Frames == 4 && st.CAN[1].Frames == 1
	})
	_, res, err := d.Trigger(context.Background(), dump.TriggerParams{Reason: "can"}, true)
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	in, err := dumpfile.ReadInfo(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tp := range in.Topics {
		if a := tp.CAN; a != nil {
			got[tp.Name] = fmt.Sprintf("%s %d %d%v %d%v", a.DBC, a.Decoded, a.Unknown, a.UnknownIDs, a.Short, a.ShortIDs)
		}
	}
	want := map[string]string{"can/can0/0x101": "vehicle.dbc 1 0[] 1[101]", "can/can0/0x555": "vehicle.dbc 0 2[555] 0[]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("accounting %v, want %v", got, want)
	}
}

// TestCANSourceNotReceiving: a [[source.can]] candump FIFO that nobody
// writes is a source that records nothing, shown as such in status
// (sources[]), /metrics (edr_source_receiving) and the log, like a silent
// UDP listener (it was in none of them: the bus list is empty until a
// frame names a bus); lines that are no candump frame make it "refused",
// naming the first; a frame makes it receiving.
func TestCANSourceNotReceiving(t *testing.T) {
	defer func(a, e time.Duration) { SourceSilentAfter, sourceCheckEvery = a, e }(SourceSilentAfter, sourceCheckEvery)
	SourceSilentAfter, sourceCheckEvery = 0, 20*time.Millisecond
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Hooks.Exec = nil
	os.MkdirAll(filepath.Join(dir, "shm"), 0o700)
	fifo := filepath.Join(dir, "can.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Sources.CAN = []config.CANSource{{Candump: fifo}}
	var logs syncBuffer
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		d.Stop()
		t.Fatal(err)
	}
	defer d.Stop()
	can := func() SourceStat {
		for _, s := range d.Status().Sources {
			if s.Kind == "can" {
				return s
			}
		}
		t.Fatalf("no CAN source in status: %+v", d.Status().Sources)
		return SourceStat{}
	}
	if s := can(); s.Receiving || s.Cause != CauseNoData || s.Key != "source.can[0]" || s.Name != fifo ||
		!strings.Contains(s.Why, "no CAN frame received from "+fifo) {
		t.Errorf("CAN source %+v, want not receiving: no data", s)
	}
	if m := httpGetDaemon(t, d, "/metrics"); HTTPBuilt && !strings.Contains(m, `edr_source_receiving{cause="no_data",kind="can",source="`+fifo+`"} 0`) {
		t.Error("/metrics lacks the silent CAN source")
	}
	waitFor(t, "the silent CAN source logged", func() bool {
		return strings.Contains(logs.String(), `msg="source receiving nothing" source=source.can[0]`)
	})
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fmt.Fprintf(w, "(1796218342.000100) can0 1G1#01\n")
	waitFor(t, "the bad line counted", func() bool { s := can(); return s.Cause == CauseRefused })
	if s := can(); s.Errors != 1 || !strings.Contains(s.Why, "none a CAN frame") || !strings.Contains(s.Why, "line 1") {
		t.Errorf("CAN source after a bad line %+v", s)
	}
	fmt.Fprintf(w, "(1796218342.000200) can0 101#01\n")
	waitFor(t, "the CAN source receiving", func() bool { s := can(); return s.Receiving && s.Messages == 1 && s.Cause == "" })
}
