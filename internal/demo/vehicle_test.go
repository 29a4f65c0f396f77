package demo

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"
)

type countPub struct {
	mu   sync.Mutex
	n    int
	last []byte
}

func (c *countPub) Publish(gen int64, p []byte) error {
	c.mu.Lock()
	c.n++
	c.last = append(c.last[:0], p...)
	c.mu.Unlock()
	return nil
}

func TestSpeedProfileBrakesHard(t *testing.T) {
	v := DefaultVehicle()
	before, after := v.Speed(v.BrakeAt-10*time.Millisecond), v.Speed(v.BrakeAt+time.Second)
	if d := before - after; d < 8 || d > 10 {
		t.Fatalf("speed drop over 1s of braking = %.2f m/s, want ~9", d)
	}
	if v.Speed(v.BrakeAt+time.Minute) != 0 {
		t.Fatal("vehicle must come to a stop")
	}
	p := v.Payload(nil, Topics[0], v.BrakeAt+time.Second, 7)
	if got := math.Float32frombits(binary.LittleEndian.Uint32(p)); math.Abs(float64(got)-after) > 1e-3 {
		t.Fatalf("speed payload %v, want %v", got, after)
	}
}

func TestRunPublishesAtRates(t *testing.T) {
	v := DefaultVehicle()
	pubs := map[string]Publisher{}
	cs := map[string]*countPub{}
	for _, tp := range Topics {
		c := &countPub{}
		cs[tp.Name], pubs[tp.Name] = c, c
	}
	if err := v.Run(context.Background(), 300*time.Millisecond, pubs); err != nil {
		t.Fatal(err)
	}
	// rates are nominal; allow generous slack, the point is every topic flows
	for name, min := range map[string]int{TopicSpeed: 20, TopicIMU: 40, TopicCamera: 5, TopicCalibration: 1} {
		if cs[name].n < min {
			t.Errorf("%s: %d messages in 300ms, want >= %d", name, cs[name].n, min)
		}
	}
	if cs[TopicCalibration].n != 1 {
		t.Errorf("calibration published %d times, want once", cs[TopicCalibration].n)
	}
	if len(cs[TopicCamera].last) != 512*400 {
		t.Errorf("camera frame %d bytes", len(cs[TopicCamera].last))
	}
}
