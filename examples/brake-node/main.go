// Command brake-node is a tiny node to test with "edr-lite replay
// --expect": it reads the vehicle speed (and the distance to an obstacle,
// when there is one) over shared memory and publishes a braking decision
// for every input it handles.
//
//	brake-node [-shm DIR] [-threshold M/S] [-gain G] [-f64] [-ttc S]
//	           [-jitter D] [-ack TOPIC] [-udp-out HOST:PORT]
//
// Inputs (segments in DIR, published by any shm producer or by "edr-lite
// replay -o shm:DIR"):
//
//	vehicle/speed     f32le, m/s
//	vehicle/obstacle  f32le, m to the obstacle ahead (optional)
//
// Output, planner/brake, the packed struct of brake.layout (next to this
// file, declared with the segment as its type), stamped with the producer
// time of the input it answers:
//
//	f32le speed (m/s)    the speed the decision is made on
//	f32le obstacle (m)   the latest obstacle distance, NaN before the first
//	f32le command        brake command 0..1: (speed² - threshold²) * gain,
//	                     1 when the obstacle is less than -ttc seconds away
//	u8 brake             1 when braking
//
// -threshold (or EDR_BRAKE_THRESHOLD) is the speed above which it brakes,
// -f64 computes the command in float64 (a rounding change: the same
// decisions within 1e-6), -jitter makes it sleep a random time up to D
// before each input (a node slower than real time), -ack publishes one
// message per input on TOPIC (for "replay --lockstep ack:TOPIC"), -udp-out
// sends the decision as a UDP datagram instead. It runs until SIGINT or
// SIGTERM. See examples/README.md.
package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

// Input and output topics.
const (
	TopicSpeed    = "vehicle/speed"
	TopicObstacle = "vehicle/obstacle"
	TopicBrake    = "planner/brake"
	// BrakeType is the type name planner/brake carries.
	BrakeType = "edr.example.Brake"
)

// brakeLayout is planner/brake's layout (brake.layout, next to this file):
// the node declares it with its segment, so a recording of it carries the
// layout and "replay --expect" names fields without --schema.
//
//go:embed brake.layout
var brakeLayout string

const (
	inSpeed ingest.TopicID = iota
	inObstacle
)

// node is the decision logic and its shm consumer's ingest.Sink: the
// consumer calls IngestAt from one goroutine per input segment, so the
// handling of one input is serialized by mu.
type node struct {
	threshold, gain, ttc float32
	f64                  bool
	jitter               time.Duration

	mu       sync.Mutex
	speed    float32
	obstacle float32
	handled  uint64
	out      func(gen int64, msg []byte) error
	ack      *shm.Producer
	buf      [13]byte
	ackBuf   [8]byte
	errs     int
}

func (n *node) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	switch info.Name {
	case TopicSpeed:
		return inSpeed, nil
	case TopicObstacle:
		return inObstacle, nil
	}
	return 0, errors.New("not an input of brake-node")
}

func (n *node) Now() int64                         { return time.Now().UnixNano() }
func (n *node) Offline(ingest.TopicID)             {}
func (n *node) Lost(ingest.TopicID, int64, uint64) {}

// IngestAt handles one input: it updates the speed or the obstacle
// distance and publishes the decision, with the input's producer time.
func (n *node) IngestAt(id ingest.TopicID, _, gen int64, p []byte) bool {
	if len(p) < 4 {
		return false
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(p))
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.jitter > 0 {
		time.Sleep(rand.N(n.jitter))
	}
	if id == inSpeed {
		n.speed = v
	} else {
		n.obstacle = v
	}
	n.handled++
	if err := n.out(gen, n.decide()); err != nil && n.errs < 10 {
		n.errs++
		fmt.Fprintf(os.Stderr, "brake-node: publishing: %v\n", err)
	}
	if n.ack != nil {
		binary.LittleEndian.PutUint64(n.ackBuf[:], n.handled)
		n.ack.Publish(gen, n.ackBuf[:])
	}
	return true
}

// decide encodes the decision on the current speed and obstacle.
func (n *node) decide() []byte {
	v, thr, g := n.speed, n.threshold, n.gain
	var cmd float32
	if n.f64 {
		cmd = float32((float64(v)*float64(v) - float64(thr)*float64(thr)) * float64(g))
	} else {
		// explicit conversions round each step to float32 (no fused
		// multiply-add), as the C node does with -ffp-contract=off
		vv, tt := float32(v*v), float32(thr*thr)
		cmd = float32((vv - tt) * g)
	}
	cmd = max(0, min(1, cmd))
	if !math.IsNaN(float64(n.obstacle)) && v > 0 && n.obstacle/v < n.ttc {
		cmd = 1
	}
	b := n.buf[:]
	binary.LittleEndian.PutUint32(b[0:], math.Float32bits(v))
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(n.obstacle))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(cmd))
	b[12] = 0
	if cmd > 0 {
		b[12] = 1
	}
	return b
}

func main() {
	dir := flag.String("shm", "/dev/shm/edr", "segment directory of the inputs (and of the output)")
	threshold := flag.Float64("threshold", envFloat("EDR_BRAKE_THRESHOLD", 18), "speed in m/s above which the node brakes (default from EDR_BRAKE_THRESHOLD, else 18)")
	gain := flag.Float64("gain", 0.01, "brake command per (m/s)² above the threshold")
	f64 := flag.Bool("f64", false, "compute the command in float64 (a rounding change)")
	ttc := flag.Float64("ttc", 2, "brake fully when the obstacle is less than this many seconds away")
	jitter := flag.Duration("jitter", 0, "sleep a random time up to this before each input (a slow node)")
	ack := flag.String("ack", "", "also publish one acknowledgement per input on this topic")
	udpOut := flag.String("udp-out", "", "send each decision as a UDP datagram to HOST:PORT instead of publishing it on shm")
	flag.Parse()
	if err := run(*dir, *threshold, *gain, *f64, *ttc, *jitter, *ack, *udpOut); err != nil {
		fmt.Fprintf(os.Stderr, "brake-node: %v\n", err)
		os.Exit(1)
	}
}

func envFloat(name string, def float64) float64 {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return v
		}
		fmt.Fprintf(os.Stderr, "brake-node: %s=%q is not a number; using %v\n", name, s, def)
	}
	return def
}

func run(dir string, threshold, gain float64, f64 bool, ttc float64, jitter time.Duration, ack, udpOut string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := &node{threshold: float32(threshold), gain: float32(gain), ttc: float32(ttc), f64: f64, jitter: jitter,
		obstacle: float32(math.NaN())}
	if udpOut != "" {
		conn, err := net.Dial("udp", udpOut)
		if err != nil {
			return err
		}
		defer conn.Close()
		n.out = func(_ int64, msg []byte) error { _, err := conn.Write(msg); return err }
	} else {
		p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: TopicBrake, Type: ingest.Packed(BrakeType, brakeLayout), Capacity: 1 << 20, MaxPayload: 64})
		if err != nil {
			return err
		}
		defer p.Close()
		n.out = p.Publish
	}
	if ack != "" {
		p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: ack, Type: ingest.Named("edr.example.Ack(u64le handled)"), MaxPayload: 64})
		if err != nil {
			return err
		}
		defer p.Close()
		n.ack = p
	}
	c, err := shm.NewConsumer(dir, n, shm.ConsumerOptions{})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "brake-node: reading %s and %s in %s, publishing %s (threshold %g m/s)\n", TopicSpeed, TopicObstacle, dir, TopicBrake, threshold)
	err = c.Run(ctx)
	n.mu.Lock()
	fmt.Fprintf(os.Stderr, "brake-node: handled %d inputs\n", n.handled)
	n.mu.Unlock()
	return err
}
