package replay

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/edr-lite/edr-lite/ingest"

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
	// DrainWait is how long Close waits for a consumer to drain and remove
	// the closed segments before it removes them itself
	// (DefaultDrainWait when 0).
	DrainWait time.Duration
}

// DefaultDrainWait is ShmOptions.DrainWait's default.
const DefaultDrainWait = 500 * time.Millisecond

// ShmOutput publishes each topic into its own shared-memory segment
// through a shm.Producer, with the recorded producer time (gen_ts) and the
// payload bytes exactly as recorded; the topic's name, channel and type
// (message encoding and schema, declared in the segment) are carried over.
// A topic whose type changes in the dump is replayed as its producer did
// it: the segment is closed and a new one declares the new type before the
// first message of that type. Close closes the producers (each segment is
// marked closed), gives a consumer DrainWait to drain and remove them, and
// removes what is left: a replay leaves no segment behind, whether or not a
// recorder was listening. Removing a segment a consumer has mapped loses
// nothing: the consumer reads what is left of a removed segment.
//
// An ShmOutput is not safe for concurrent use (the Player drives it).
type ShmOutput struct {
	opts   ShmOptions
	topics []Topic
	prods  []*shm.Producer
	types  []*ingest.Type // the type each producer declared (Message.Type pointers)
	files  []os.FileInfo  // each segment as created, so Close removes only its own
}

// NewShm returns an Output into the segment directory opts.Dir.
func NewShm(opts ShmOptions) *ShmOutput { return &ShmOutput{opts: opts} }

// Open creates one segment per topic.
func (o *ShmOutput) Open(topics []Topic) error {
	if o.opts.Dir == "" {
		return fmt.Errorf("%w: shm output needs a directory", ErrOptions)
	}
	o.topics = topics
	for i := range topics {
		t := &topics[i]
		p, err := o.producer(t, t.Type)
		if err != nil {
			o.Close()
			return err
		}
		o.prods = append(o.prods, p)
		fi, err := os.Lstat(p.Path())
		if err != nil {
			p.Close()
			o.Close()
			return fmt.Errorf("replay: shm segment for %s: %w", t, err)
		}
		o.types = append(o.types, nil)
		o.files = append(o.files, fi)
	}
	return nil
}

// producer creates the segment of t declaring typ.
func (o *ShmOutput) producer(t *Topic, typ ingest.Type) (*shm.Producer, error) {
	p, err := shm.NewProducer(o.opts.Dir, shm.ProducerOptions{Name: t.Name, Channel: t.Channel, Type: typ,
		Capacity: o.opts.Capacity, Mode: o.opts.Mode})
	if err != nil {
		return nil, fmt.Errorf("replay: shm segment for %s: %w", t, err)
	}
	return p, nil
}

// Write publishes m into its topic's segment, first restarting the
// segment when m's type differs from the one it declares.
func (o *ShmOutput) Write(m *Message) error {
	i := m.Topic.Index
	if m.Type != nil && o.types[i] != m.Type {
		cur := o.topics[i].Type
		if o.types[i] != nil {
			cur = *o.types[i]
		}
		o.types[i] = m.Type
		if !cur.Equal(*m.Type) {
			if err := o.prods[i].Close(); err != nil {
				return err
			}
			// The consumer must see the old segment closed before the new
			// one replaces it (a live producer's segment is not replaced).
			p, err := o.producer(m.Topic, *m.Type)
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p.Path())
			if err != nil {
				p.Close()
				return fmt.Errorf("replay: shm segment for %s: %w", m.Topic, err)
			}
			o.prods[i], o.files[i] = p, fi
		}
	}
	err := o.prods[i].Publish(m.GenNs, m.Data)
	if errors.Is(err, shm.ErrTooLarge) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return err
}

// Close closes every producer, waits up to DrainWait for a consumer to
// remove the segments, and removes those still there that are its own.
func (o *ShmOutput) Close() error {
	var errs []error
	paths := make([]string, len(o.prods))
	for i, p := range o.prods {
		paths[i] = p.Path()
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	wait := o.opts.DrainWait
	if wait <= 0 {
		wait = DefaultDrainWait
	}
	deadline := time.Now().Add(wait)
	for i := 0; i < len(paths); {
		fi, err := os.Lstat(paths[i])
		switch {
		case err != nil || !os.SameFile(fi, o.files[i]):
			i++ // removed by the consumer (or replaced: not ours)
		case time.Now().Before(deadline):
			time.Sleep(10 * time.Millisecond)
		default:
			if err := os.Remove(paths[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			i++
		}
	}
	o.prods, o.files = nil, nil
	return errors.Join(errs...)
}
