//go:build !ecu

package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/demo"
)

// The demo's CAN bus (DemoOptions.CAN, "edr-lite demo --can"): the vehicle
// writes candump lines of the shipped DBC's frames into a FIFO, which a
// [[source.can]] candump table reads with that DBC, and a second
// hard_brake rule reads the DBC signal WheelFL (km/h). No privilege is
// needed: a FIFO, no CAN interface nor raw socket.

// DemoCANRule is the rule on the DBC signal.
const DemoCANRule = "hard_brake_can"

// demoCANFiles writes the DBC and makes the FIFO in dir.
func demoCANFiles(dir string) (fifo, dbc string, err error) {
	dbc = filepath.Join(dir, "vehicle.dbc")
	if err := os.WriteFile(dbc, []byte(demo.VehicleDBC), 0o644); err != nil {
		return "", "", err
	}
	fifo = filepath.Join(dir, "can0.candump")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		return "", "", fmt.Errorf("demo: the CAN bus's FIFO %s: %w", fifo, err)
	}
	return fifo, dbc, nil
}

// addDemoCAN adds the bus and the rule on its signal to the demo
// configuration.
func addDemoCAN(f *config.File, fifo, dbc string) {
	f.Sources.CAN = append(f.Sources.CAN, config.CANSource{Candump: fifo, DBC: dbc})
	f.Rules = append(f.Rules, config.Rule{Name: "hard_brake", Params: map[string]string{
		"name": DemoCANRule, "topic": demo.TopicCAN + "/WheelSpeeds", "path": "WheelFL",
		"scale": strconv.FormatFloat(1/3.6, 'g', -1, 64), "decel": "6"}})
}

// fifoPublisher writes each payload (a candump line) to the FIFO.
type fifoPublisher struct{ f *os.File }

func (p fifoPublisher) Publish(_ int64, b []byte) error {
	_, err := p.f.Write(b)
	return err
}

// openDemoCAN opens the FIFO for writing (the recorder holds it open for
// reading) and returns its publisher.
func openDemoCAN(fifo string) (*os.File, demo.Publisher, error) {
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	return f, fifoPublisher{f}, nil
}
