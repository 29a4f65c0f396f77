package dump

import (
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/kway"
)

// DefaultReorderMaxMessages bounds the reorder stage when
// Config.ReorderMaxMessages is 0.
const DefaultReorderMaxMessages = 1 << 16

// reorderStage sits between the capture-time merge and the Writer and
// re-emits messages in producer-time order (capture time when a message has
// none), holding at most window of capture time and maxMsgs messages: a
// message whose producer time lags its capture by more than the window is
// written late (out of order) rather than held without bound. It copies the
// messages it holds. Dumper goroutine only.
type reorderStage struct {
	w       Writer
	window  int64
	maxMsgs int
	h       *kway.Heap[reorderItem]
	n       uint64
	free    [][]byte // recycled data buffers
}

type reorderItem struct {
	topic    *ingest.TopicInfo
	key      int64 // producer time, else capture time
	gen, cap int64
	order    uint64 // arrival order: ties keep capture order
	data     []byte
}

// reorderBefore orders held messages by key, then arrival.
func reorderBefore(a, b reorderItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.order < b.order
}

func newReorderStage(w Writer, window int64, maxMsgs int) *reorderStage {
	if maxMsgs <= 0 {
		maxMsgs = DefaultReorderMaxMessages
	}
	return &reorderStage{w: w, window: window, maxMsgs: maxMsgs, h: kway.New(reorderBefore, 64)}
}

// WriteMessage takes one message in capture order and writes every held
// message that can no longer be overtaken.
func (s *reorderStage) WriteMessage(t *ingest.TopicInfo, gen, capNs int64, data []byte) error {
	key := gen
	if key == 0 {
		key = capNs
	}
	var buf []byte
	if n := len(s.free); n > 0 {
		buf, s.free = s.free[n-1][:0], s.free[:n-1]
	}
	s.n++
	s.h.Push(reorderItem{topic: t, key: key, gen: gen, cap: capNs, order: s.n, data: append(buf, data...)})
	for s.h.Len() > 0 && (s.h.Top().key <= capNs-s.window || s.h.Len() > s.maxMsgs) {
		if err := s.emit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *reorderStage) emit() error {
	it := s.h.Pop()
	err := s.w.WriteMessage(it.topic, it.gen, it.cap, it.data)
	s.free = append(s.free, it.data)
	return err
}

// flush writes everything still held.
func (s *reorderStage) flush() error {
	for s.h.Len() > 0 {
		if err := s.emit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *reorderStage) SetInfo(info dumpinfo.Info) error { return s.w.SetInfo(info) }
func (s *reorderStage) Close() error                     { return s.w.Close() }
func (s *reorderStage) Abort() error                     { return s.w.Abort() }
