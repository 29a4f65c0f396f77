package mcap

import (
	"hash/crc32"
	"slices"
	"sync"
)

// chunkPipeline compresses closed chunks concurrently (Options.Concurrency)
// while the Writer goes on filling the next one, and hands them back in the
// order they were closed, so the file's bytes are the serial writer's.
//
// A closed chunk becomes a chunkJob: its records buffer (the Writer takes
// a free one in its place), its times, its MessageIndex entries per
// channel. A goroutine started for the job takes a compressor from the
// pipeline's pool (one per worker: none is shared), compresses the records
// and computes their CRC, and closes done. The Writer emits jobs from the
// front of the queue once done; it waits for the oldest when more than
// Concurrency+1 are queued, so memory stays bounded by that many chunks and
// their compressed copies. A job's goroutine ends with the job: a Writer
// abandoned mid-file leaves nothing running once the jobs finish. The
// compressors and jobs (with their buffers) of a closed Writer go back to
// package pools for the next Writer: an export of several files, or a
// program exporting often, does not build zstd encoders and chunk buffers
// anew each time.
type chunkPipeline struct {
	comps chan compressor // the idle compressors; a job takes one
	queue []*chunkJob     // closed chunks, oldest first
	free  []*chunkJob     // emitted jobs whose buffers are reused
	limit int             // most jobs queued
}

type chunkJob struct {
	records    []byte
	out        []byte // compressed records
	crc        uint32 // of records
	err        error
	start, end uint64
	msgs       int
	chans      []uint16       // channels with messages, sorted
	idx        [][]indexEntry // their entries, by position in chans
	done       chan struct{}
}

func newChunkPipeline(workers int, first compressor) *chunkPipeline {
	p := &chunkPipeline{comps: make(chan compressor, workers), limit: workers + 1}
	p.comps <- first
	for range workers - 1 {
		p.comps <- nil // from the pool or made on first use, by the job that takes it
	}
	return p
}

// compKey names the compressors that can be shared: same codec, same
// chunk size (which sets the lz4 block size and the zstd window).
type compKey struct {
	name      string
	chunkSize int
}

var (
	compPoolMu sync.Mutex
	compPool   = map[compKey][]compressor{}
	jobPool    sync.Pool // *chunkJob
)

// maxPooledCompressors bounds the idle compressors kept per key.
const maxPooledCompressors = 16

func getCompressor(name string, chunkSize int) (compressor, error) {
	k := compKey{name, chunkSize}
	compPoolMu.Lock()
	if cs := compPool[k]; len(cs) > 0 {
		c := cs[len(cs)-1]
		compPool[k] = cs[:len(cs)-1]
		compPoolMu.Unlock()
		return c, nil
	}
	compPoolMu.Unlock()
	return newCompressor(name, chunkSize)
}

// release gives the pipeline's compressors and jobs back to the pools. The
// queue must be empty (every job emitted).
func (p *chunkPipeline) release(name string, chunkSize int) {
	k := compKey{name, chunkSize}
	compPoolMu.Lock()
	for range cap(p.comps) {
		if c := <-p.comps; c != nil && len(compPool[k]) < maxPooledCompressors {
			compPool[k] = append(compPool[k], c)
		}
	}
	compPoolMu.Unlock()
	for _, j := range p.free {
		jobPool.Put(j)
	}
	p.free = nil
}

func (j *chunkJob) run(comps chan compressor, name string, chunkSize int) {
	defer close(j.done)
	c := <-comps
	if c == nil {
		if c, j.err = getCompressor(name, chunkSize); j.err != nil {
			comps <- nil
			return
		}
	}
	j.out, j.err = c.compress(j.out[:0], j.records)
	comps <- c
	j.crc = crc32.ChecksumIEEE(j.records)
}

// queueChunk hands the open chunk to the pipeline and starts a new one,
// emitting the oldest jobs first while too many are queued.
func (w *Writer) queueChunk() error {
	p := w.pipe
	if err := w.drainChunks(p.limit - 1); err != nil {
		return err
	}
	var j *chunkJob
	if n := len(p.free); n > 0 {
		j, p.free = p.free[n-1], p.free[:n-1]
	} else if pj, ok := jobPool.Get().(*chunkJob); ok {
		j = pj
	} else {
		j = &chunkJob{}
	}
	j.done = make(chan struct{})
	j.err = nil
	j.start, j.end, j.msgs = w.chunkStart, w.chunkEnd, w.chunkMsgs
	if j.msgs == 0 {
		j.start, j.end = 0, 0
	}
	slices.Sort(w.touched)
	j.chans = append(j.chans[:0], w.touched...)
	for len(j.idx) < len(j.chans) {
		j.idx = append(j.idx, nil)
	}
	for i, ch := range j.chans {
		j.idx[i] = append(j.idx[i][:0], w.idx[ch]...)
		w.idx[ch] = w.idx[ch][:0]
	}
	// The job takes the records; the Writer fills the job's old buffer.
	j.records, w.chunk = w.chunk, j.records[:0]
	if cap(w.chunk) == 0 {
		w.chunk = make([]byte, 0, w.opt.ChunkSize+w.opt.ChunkSize/8)
	}
	w.touched = w.touched[:0]
	w.chunkEmptied()
	p.queue = append(p.queue, j)
	go j.run(p.comps, w.opt.Compression, w.opt.ChunkSize)
	return nil
}

// drainChunks emits queued chunks, oldest first, until at most keep are
// queued (0: all), waiting for each to be compressed.
func (w *Writer) drainChunks(keep int) error {
	p := w.pipe
	if p == nil {
		return nil
	}
	for len(p.queue) > keep {
		j := p.queue[0]
		<-j.done
		p.queue = p.queue[1:]
		p.free = append(p.free, j)
		if j.err != nil {
			w.err = j.err
			return w.err
		}
		if err := w.emitChunk(j.records, j.out, j.crc, j.start, j.end); err != nil {
			return err
		}
		for i, ch := range j.chans {
			w.emitMessageIndex(ch, j.idx[i])
		}
		w.endChunk()
		if len(w.stage) >= stageFlush {
			if err := w.flushStage(); err != nil {
				return err
			}
		}
	}
	return nil
}
