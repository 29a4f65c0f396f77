package can

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// LogSource feeds buses from a candump log as it is written: a FIFO that
// "candump -L can0" (or a simulation) writes into, read line by line. The
// capture time of a frame is when its line arrived, its producer time the
// line's own time. A line that is not a frame is counted (Stats) and
// skipped: the source goes on. Run, Close and Stats may be called from
// different goroutines.
type LogSource struct {
	r      io.ReadCloser
	cr     *CandumpReader
	sink   ingest.Sink
	o      BusOptions
	mu     sync.Mutex
	buses  map[string]*Bus
	list   []*Bus
	bad    atomic.Uint64
	first  atomic.Pointer[string]
	closed atomic.Bool
	run    sync.Mutex // held by Run: Close waits for it
}

// LogStats are a LogSource's own counters.
type LogStats struct {
	BadLines uint64
	FirstBad string // the first bad line's fault ("line 7, column 30: ...")
	Dropped  map[string]uint64
}

// NewLogSource reads r (a FIFO, a pipe) as a candump log. Each bus of the
// log is a Bus with o's settings (o.Name is ignored: the log names its
// buses; o.Topic, when set, is the prefix of their topics instead of
// "can/").
func NewLogSource(r io.ReadCloser, sink ingest.Sink, o BusOptions) *LogSource {
	return &LogSource{r: r, cr: NewCandumpReader(r), sink: sink, o: o, buses: map[string]*Bus{}}
}

// Run reads until the writer closes (nil), ctx ends (ctx.Err()) or
// Close (nil).
func (s *LogSource) Run(ctx context.Context) error {
	s.run.Lock()
	defer s.run.Unlock()
	if s.closed.Load() {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { s.r.Close() })
	defer stop()
	var rec Record
	for {
		err := s.cr.Next(&rec)
		switch {
		case err == nil:
			b := s.bus(rec.Bus)
			if b != nil {
				b.Record(time.Now().UnixNano(), rec.TimeNs, &rec.Frame)
			}
			continue
		case errors.Is(err, ErrLog):
			s.bad.Add(1)
			if s.first.Load() == nil {
				m := err.Error()
				s.first.Store(&m)
			}
			continue
		case err == io.EOF, s.closed.Load(), errors.Is(err, os.ErrClosed):
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

func (s *LogSource) bus(name []byte) *Bus {
	if b := s.buses[string(name)]; b != nil {
		return b
	}
	if len(s.buses) >= 64 {
		return nil
	}
	o := s.o
	o.Name = string(name)
	if s.o.Topic != "" {
		o.Topic = s.o.Topic + "/" + o.Name
	} else {
		o.Topic = ""
	}
	b, err := NewBus(s.sink, o)
	if err != nil {
		s.buses[string(name)] = nil
		return nil
	}
	s.buses[o.Name] = b
	s.mu.Lock()
	s.list = append(s.list, b)
	s.mu.Unlock()
	return b
}

// Buses returns the buses seen so far.
func (s *LogSource) Buses() []*Bus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Bus(nil), s.list...)
}

// Stats returns the source's counters.
func (s *LogSource) Stats() LogStats {
	st := LogStats{BadLines: s.bad.Load()}
	if p := s.first.Load(); p != nil {
		st.FirstBad = *p
	}
	return st
}

// Close stops Run and reports the buses' topics offline.
func (s *LogSource) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.r.Close()
	s.run.Lock() // Run has returned
	defer s.run.Unlock()
	for _, b := range s.Buses() {
		b.Close()
	}
	return err
}
