package capture

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Stats are a source's counters since it was created. Losses are counted
// here, never returned as errors.
type Stats struct {
	// Packets is how many packets the source read from the kernel.
	Packets uint64
	// Bytes is their size: UDP payload bytes (UDP source) or frame bytes
	// (raw source).
	Bytes uint64
	// Ingested is how many the sink accepted.
	Ingested uint64
	// Rejected is how many the sink refused (topic offline, oversize).
	Rejected uint64
	// Unmapped is how many mapped to no topic: the template needs a field
	// the packet lacks, Discover refused the topic, or MaxTopics was reached.
	Unmapped uint64
	// Malformed is how many frames had headers that failed to parse.
	Malformed uint64
	// Truncated is how many were larger than the receive buffer or snap
	// length; they are not ingested.
	Truncated uint64
	// Lost is how many the kernel dropped before the source could read
	// them: the socket's overflow counter (SO_RXQ_OVFL) for UDP, the
	// PACKET_STATISTICS drops for raw.
	Lost uint64
	// KernelPackets (raw only) is how many packets the kernel handed to
	// the socket, i.e. that passed the socket filter (PACKET_STATISTICS).
	KernelPackets uint64
	// Topics is how many topics the source discovered.
	Topics uint64
}

// counters is the concurrently readable form of Stats. The source
// goroutine adds a batch's worth at a time.
type counters struct {
	packets, bytes, ingested, rejected, unmapped atomic.Uint64
	malformed, truncated, lost, kernelPackets    atomic.Uint64
	topics                                       atomic.Uint64
}

func (c *counters) add(b *Stats, m *mapper) {
	c.topics.Store(uint64(m.topics()))
	add := func(a *atomic.Uint64, v *uint64) {
		if *v != 0 {
			a.Add(*v)
			*v = 0
		}
	}
	add(&c.packets, &b.Packets)
	add(&c.bytes, &b.Bytes)
	add(&c.ingested, &b.Ingested)
	add(&c.rejected, &b.Rejected)
	add(&c.unmapped, &b.Unmapped)
	add(&c.malformed, &b.Malformed)
	add(&c.truncated, &b.Truncated)
	add(&c.lost, &b.Lost)
	add(&c.kernelPackets, &b.KernelPackets)
}

func (c *counters) stats() Stats {
	return Stats{
		Packets: c.packets.Load(), Bytes: c.bytes.Load(), Ingested: c.ingested.Load(),
		Rejected: c.rejected.Load(), Unmapped: c.unmapped.Load(), Malformed: c.malformed.Load(),
		Truncated: c.truncated.Load(), Lost: c.lost.Load(), KernelPackets: c.kernelPackets.Load(),
		Topics: c.topics.Load(),
	}
}

// deliver hands one packet to the sink through the mapper and counts the
// outcome in b. It is the per-packet hot path shared by both sources.
func deliver(m *mapper, p *Packet, captureNs int64, payload []byte, b *Stats) {
	id, ok := m.lookup(p)
	switch {
	case !ok:
		b.Unmapped++
	case m.sink.IngestAt(id, captureNs, 0, payload):
		b.Ingested++
	default:
		b.Rejected++
	}
}

// lifecycle is the Run / Close protocol both sources share: one Run at a
// time, Close wakes Run and waits for it to return before resources go.
type lifecycle struct {
	mu      sync.Mutex
	running bool
	closed  bool
	done    chan struct{}
}

var errRunning = errors.New("capture: Run already in progress")

func (l *lifecycle) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return fmt.Errorf("capture: Run: %w", os.ErrClosed)
	case l.running:
		return errRunning
	}
	l.running = true
	l.done = make(chan struct{})
	return nil
}

func (l *lifecycle) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = false
	close(l.done)
}

// close marks the source closed, calls wake (which must make a blocked Run
// return) and waits for Run to finish. It reports false when already closed.
func (l *lifecycle) close(wake func()) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.closed = true
	running, done := l.running, l.done
	l.mu.Unlock()
	wake()
	if running {
		<-done
	}
	return true
}

func (l *lifecycle) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}
