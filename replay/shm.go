package replay

import (
	"errors"
	"fmt"
	"os"

	"github.com/edr-lite/edr-lite/shm"
)

// ShmOptions configure a ShmOutput.
type ShmOptions struct {
	// Dir is the segment directory a recorder's shm consumer watches
	// (created when missing).
	Dir string
	// Capacity is each segment's ring size in bytes (shm.DefaultCapacity
	// when 0). A message longer than about half of it is dropped (counted
	// in Stats.Dropped). As fast as possible, a consumer that cannot keep up
	// loses the oldest records of a full ring (the producer never waits):
	// give the segments room or replay at a rate.
	Capacity int
	// Mode is the segments' permission bits (0600 when 0).
	Mode os.FileMode
}

// ShmOutput publishes each topic into its own shared-memory segment
// through a shm.Producer, with the recorded producer time (gen_ts) and the
// payload bytes exactly as recorded; the topic's name, channel and type are
// carried over. Close closes the producers: the segment files stay, marked
// closed, for the consumer to drain and remove.
//
// An ShmOutput is not safe for concurrent use (the Player drives it).
type ShmOutput struct {
	opts  ShmOptions
	prods []*shm.Producer
}

// NewShm returns an Output into the segment directory opts.Dir.
func NewShm(opts ShmOptions) *ShmOutput { return &ShmOutput{opts: opts} }

// Open creates one segment per topic.
func (o *ShmOutput) Open(topics []Topic) error {
	if o.opts.Dir == "" {
		return fmt.Errorf("%w: shm output needs a directory", ErrOptions)
	}
	for i := range topics {
		t := &topics[i]
		p, err := shm.NewProducer(o.opts.Dir, shm.ProducerOptions{Name: t.Name, Channel: t.Channel, Type: t.Type,
			Capacity: o.opts.Capacity, Mode: o.opts.Mode})
		if err != nil {
			o.Close()
			return fmt.Errorf("replay: shm segment for %s: %w", t, err)
		}
		o.prods = append(o.prods, p)
	}
	return nil
}

// Write publishes m into its topic's segment.
func (o *ShmOutput) Write(m *Message) error {
	err := o.prods[m.Topic.Index].Publish(m.GenNs, m.Data)
	if errors.Is(err, shm.ErrTooLarge) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return err
}

// Close closes every producer.
func (o *ShmOutput) Close() error {
	var first error
	for _, p := range o.prods {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.prods = nil
	return first
}
