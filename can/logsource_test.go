package can

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestLogSource: lines written to a pipe are recorded as they come, each
// bus on its topic with the DBC's messages, the line's time as producer
// time; a bad line is counted and skipped; the writer closing ends Run.
func TestLogSource(t *testing.T) {
	rec := newRecorder(t)
	pr, pw := io.Pipe()
	s := NewLogSource(pr, rec, BusOptions{Source: "candump:test", DBC: loadDBC(t, "testdata/vehicle.dbc")})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	io.WriteString(pw, "(1796218342.000100) can0 101#ABC8FF3800000007\n(1796218342.000200) can1 123#00\n")
	io.WriteString(pw, "(1796218342.000300) can0 12#00\n(1796218342.000400) can0 101#0100000000000000\n")
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := readAll(t, rec, "can/can0/Brake")
	if len(got) != 2 || got[0].GenNs != 1796218342000100000 {
		t.Fatalf("can/can0/Brake: %+v", got)
	}
	if n := len(readAll(t, rec, "can/can1")); n != 1 {
		t.Errorf("can/can1: %d frames", n)
	}
	st := s.Stats()
	if st.BadLines != 1 || !strings.Contains(st.FirstBad, "line 3, column 26") {
		t.Errorf("stats %+v", st)
	}
	if len(s.Buses()) != 2 {
		t.Errorf("%d buses", len(s.Buses()))
	}
	s.Close()
	if topicByName(t, rec, "can/can0").Online {
		t.Error("online after Close")
	}
}
