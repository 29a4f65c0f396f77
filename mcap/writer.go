package mcap

import (
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"

	"github.com/edr-lite/edr-lite/evidence"
)

// DefaultChunkSize is the uncompressed size at which a chunk is closed when
// Options.ChunkSize is zero.
const DefaultChunkSize = 1 << 20

// ExportConcurrency is the Options.Concurrency an export or rewrite uses
// for a compression: chunks compressed on every core (GOMAXPROCS), lz4 and
// zstd alike (the file's bytes are the serial writer's); 1 uncompressed.
// lz4 was compressed serially until issue 33: on a 2-vCPU VM whose cores
// other work held, handing chunks to other goroutines cost more than it
// gained, but on a machine with free cores serial lz4 ran at 0.39 of the
// uncompressed export where all cores gave 0.69 (docs/performance.md, MCAP
// export).
func ExportConcurrency(compression string) int {
	if compression == CompressionNone {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// DefaultLibrary is written to Header.library when Options.Library is "".
const DefaultLibrary = "edr-lite mcap"

// stageFlush is how many staged bytes (record headers, indexes) the writer
// collects before handing them to the underlying io.Writer.
const stageFlush = 64 << 10

// Options configure a Writer. The zero value writes uncompressed 1 MiB
// chunks with an empty profile.
type Options struct {
	// Profile goes into Header.profile ("" = none, "ros2", "x-...").
	Profile string
	// Library goes into Header.library; DefaultLibrary when "".
	Library string
	// Compression of chunks: CompressionNone, CompressionLZ4 or CompressionZstd.
	Compression string
	// ChunkSize closes a chunk once its uncompressed records reach this
	// many bytes (a single larger message makes a larger chunk).
	// DefaultChunkSize when <= 0.
	ChunkSize int
	// KeepPacked makes a PackWriter write packed-struct topics
	// (x-edr-packed) as they are, with their layout as the schema
	// (x-edr-layout), instead of transcoding them to json with a JSON
	// Schema that viewers plot (the default). The low-level Writer
	// ignores it.
	KeepPacked bool
	// Concurrency is how many chunks are compressed at once, each on a
	// goroutine of its own with its own compressor (chunkPipeline); the
	// chunks are written in order and the bytes are those of the serial
	// writer. At most Concurrency+1 closed chunks are held, with their
	// compressed copies. 0 or 1: each chunk is compressed on the calling
	// goroutine when it closes (the recorder's dumps). Without compression
	// it changes nothing.
	Concurrency int
	// Seal, when set, seals the file (seal.go, docs/evidence.md): every
	// byte written is hashed as it is written, and Close writes the signed
	// seal, an "edr.seal" Metadata record, as the data section's last
	// record. Its format must be evidence.FormatMCAP.
	Seal *evidence.Sealer
}

type indexEntry struct {
	logTime uint64
	offset  uint64
}

type chunkIndex struct {
	start, end       uint64
	offset, length   uint64
	miFrom, miTo     int // range in Writer.miChan / miOff
	miLength         uint64
	compressedSize   uint64
	uncompressedSize uint64
}

type metadataIndex struct {
	offset, length uint64
	name           string
}

type attachmentIndex struct {
	offset, length      uint64
	logTime, createTime uint64
	size                uint64
	name, mediaType     string
}

// Writer writes one MCAP file to an io.Writer in a single pass: Header,
// a chunked data section (each chunk followed by its MessageIndex records),
// DataEnd with the data section CRC, a summary section (Schema, Channel,
// Statistics, ChunkIndex, AttachmentIndex and MetadataIndex groups), the SummaryOffset
// section and the Footer with the summary CRC. All CRCs are CRC32 (IEEE) as
// the specification requires.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	opt Options
	err error // sticky

	pos   uint64 // bytes handed to w so far
	crc   uint32 // running CRC of the data section (from the leading magic)
	stage []byte // bytes not yet handed to w (counted in pos only when flushed)

	chunk      []byte // uncompressed records of the open chunk
	chunkStart uint64
	chunkEnd   uint64
	chunkMsgs  int
	comp       compressor
	compBuf    []byte
	head       []byte
	pipe       *chunkPipeline // Options.Concurrency > 1 with compression

	schemas  []Schema  // schemas[i].ID == i+1
	channels []Channel // channels[i].ID == i
	idx      [][]indexEntry
	touched  []uint16 // channels with messages in the open chunk
	counts   []uint64 // messages per channel

	chunks   []chunkIndex
	miChan   []uint16
	miOff    []uint64
	metadata []metadataIndex
	attached []attachmentIndex

	messages  uint64
	startTime uint64
	endTime   uint64
	closed    bool

	// Borrowed payloads (WriteMessageBorrowed): lent are the open chunk's,
	// in record order, lentBytes their sum; prov is the chunk written
	// provisionally until KeepChunk or TakeBackChunk; doneStart and
	// doneEnd are the time range of the chunks written (the open chunk's
	// messages not counted), to take a chunk back to.
	lent      []lentPayload
	lentBytes int
	iov       [][]byte
	prov      provisional
	doneStart uint64
	doneEnd   uint64

	seal sealState // Options.Seal's (seal.go)

	// A chunk written by WriteChunkLent: its pieces (from heldAt), held
	// until KeepChunk lends them to the seal's worker with lender; the
	// worker then reads the chunk's records in the buffer set aside
	// (spareChunk, swapped with chunk) and its head's copy in heads.
	readBack   bool // the seal's Hasher reads the file (Create's write(2) path)
	held       bool
	heldAt     int64
	heldIov    [][]byte
	lender     evidence.Lender
	spareChunk []byte
	heads      [2][]byte
	hk         int
}

// lentPayload is a message payload the open chunk borrows: its bytes go
// into the chunk's records at offset at of Writer.chunk (right after the
// message's header, which is in Writer.chunk).
type lentPayload struct {
	at   int
	data []byte
}

// provisional is a chunk written by WriteChunkProvisional, not yet kept:
// where it starts, and the data section's CRC before it.
type provisional struct {
	pending bool
	pos     uint64
	crc     uint32
}

// lendingSink is an underlying writer that can take a chunk straight from
// the memory of its pieces and take back what was written from an offset
// (durable.Buffered): a Writer borrows payloads only over one.
type lendingSink interface {
	Writev(pieces [][]byte, n int64) error
	Rewind(to int64) error
}

// NewWriter writes the magic and Header to w and returns a Writer. Close
// finishes the file; it does not close w.
func NewWriter(w io.Writer, opt Options) (*Writer, error) {
	if opt.ChunkSize <= 0 {
		opt.ChunkSize = DefaultChunkSize
	}
	if opt.Library == "" {
		opt.Library = DefaultLibrary
	}
	if opt.Seal != nil && opt.Seal.Format() != evidence.FormatMCAP {
		return nil, fmt.Errorf("BUG: mcap: a sealer of %s files", opt.Seal.Format())
	}
	var comp compressor
	var err error
	if opt.Concurrency > 1 && opt.Compression != CompressionNone {
		comp, err = getCompressor(opt.Compression, opt.ChunkSize) // the pipeline's, pooled
	} else {
		comp, err = newCompressor(opt.Compression, opt.ChunkSize)
	}
	if err != nil {
		return nil, err
	}
	wr := &Writer{w: w, opt: opt, comp: comp, chunk: make([]byte, 0, opt.ChunkSize+opt.ChunkSize/8)}
	if comp != nil && opt.Concurrency > 1 {
		wr.pipe = newChunkPipeline(opt.Concurrency, comp)
		wr.comp = nil
	}
	wr.stage = append(wr.stage, Magic[:]...)
	wr.stage = AppendHeader(wr.stage, opt.Profile, opt.Library)
	if err := wr.flushStage(); err != nil {
		return nil, err
	}
	return wr, nil
}

// Written returns how many bytes have been handed to the underlying writer.
func (w *Writer) Written() int64 { return int64(w.pos) }

func (w *Writer) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if w.seal.holding { // Close's records after the seal (seal.go)
		w.seal.tail = append(w.seal.tail, p...)
		w.pos += uint64(len(p))
		return nil
	}
	if w.opt.Seal != nil {
		w.opt.Seal.WriteAsync(p) // while the write copies it (a small p: copied aside while a chunk is hashed)
	}
	n, err := w.w.Write(p)
	if w.opt.Seal != nil && len(p) >= asyncMin {
		w.opt.Seal.Wait() // p's memory is reused; a short write fails the file below: no seal is made
	}
	w.pos += uint64(n)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("mcap: write at offset %d: %w", w.pos, err)
	}
	return w.err
}

// flushStage hands the staged bytes to w, adding them to the data CRC.
func (w *Writer) flushStage() error {
	w.crc = crc32.Update(w.crc, crc32.IEEETable, w.stage)
	err := w.write(w.stage)
	w.stage = w.stage[:0]
	return err
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("mcap: writer: %w", os.ErrClosed)
	}
	return nil
}

// AddSchema registers a schema and returns its id; an identical schema
// registered before returns the earlier id. The Schema record goes into
// the data section (the open chunk) and the summary.
func (w *Writer) AddSchema(name, encoding string, data []byte) (uint16, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	for i := range w.schemas {
		s := &w.schemas[i]
		if s.Name == name && s.Encoding == encoding && string(s.Data) == string(data) {
			return s.ID, nil
		}
	}
	if len(w.schemas) >= 0xFFFF {
		return 0, ErrChannelLimit
	}
	s := Schema{ID: uint16(len(w.schemas) + 1), Name: name, Encoding: encoding, Data: slices.Clone(data)}
	w.schemas = append(w.schemas, s)
	w.chunk = AppendSchema(w.chunk, &s)
	return s.ID, nil
}

// AddChannel registers a channel and returns its id (ids count from 0).
// schemaID is 0 or an id from AddSchema. The Channel record goes into the
// data section (the open chunk) and the summary.
func (w *Writer) AddChannel(schemaID uint16, topic, messageEncoding string, metadata map[string]string) (uint16, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if int(schemaID) > len(w.schemas) {
		return 0, fmt.Errorf("mcap: channel %q: schema id %d was never added", topic, schemaID)
	}
	if len(w.channels) > 0xFFFF {
		return 0, ErrChannelLimit
	}
	c := Channel{ID: uint16(len(w.channels)), SchemaID: schemaID, Topic: topic,
		MessageEncoding: messageEncoding, Metadata: maps.Clone(metadata)}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	w.channels = append(w.channels, c)
	w.idx = append(w.idx, nil)
	w.counts = append(w.counts, 0)
	w.chunk = AppendChannel(w.chunk, &c)
	return c.ID, nil
}

// AddTopic registers an edr-lite topic and returns its channel id:
//
//   - Channel.topic is TopicName(t.Name, t.Channel) ("name#channel").
//   - message_encoding is t.Type's (RawMessageEncoding, "x-edr-raw", for
//     the zero Type: opaque bytes).
//   - A Schema {name, schema encoding, data} when the type has a schema
//     name or encoding: protobuf FileDescriptorSet bytes, a JSON Schema,
//     ROS 2 definitions, a layout, as they are. Opaque bytes with a known
//     type name get a Schema with that name and an empty encoding (the
//     specification's "no schema available"), so viewers list the topic
//     with its type name and counts.
//   - Channel metadata carries edr.name, edr.channel and edr.type (the
//     schema name), then t.Metadata.
//
// Identical schemas are written once (AddSchema).
func (w *Writer) AddTopic(t Topic) (uint16, error) {
	typ := t.Type.OrRaw()
	var sid uint16
	if typ.Schema.Name != "" || typ.Schema.Encoding != "" {
		var err error
		if sid, err = w.AddSchema(typ.Schema.Name, typ.Schema.Encoding, typ.Schema.Data); err != nil {
			return 0, err
		}
	}
	md := map[string]string{"edr.name": t.Name}
	if t.Channel != "" {
		md["edr.channel"] = t.Channel
	}
	if typ.Schema.Name != "" {
		md["edr.type"] = typ.Schema.Name
	}
	maps.Copy(md, t.Metadata)
	return w.AddChannel(sid, TopicName(t.Name, t.Channel), typ.MessageEncoding, md)
}

// Reserve returns n bytes of the open chunk where the data of the next
// message can be written in place: a WriteMessage (the next call on the
// Writer) whose Data is the slice returned does not copy it. Any other
// call may reuse those bytes (AddSchema, AddChannel append to the chunk):
// write the data aside first if one comes before the message.
func (w *Writer) Reserve(n int) []byte {
	w.chunk = slices.Grow(w.chunk, messageHeaderLen+n)
	at := len(w.chunk) + messageHeaderLen
	return w.chunk[at : at+n : at+n]
}

// messageHeaderLen is a Message record's bytes before its data.
const messageHeaderLen = 1 + 8 + messageFixedLen

// reserved reports whether data is what Reserve returned for the next
// message: where that message's data goes in the open chunk.
func (w *Writer) reserved(data []byte) bool {
	n := len(data)
	at := len(w.chunk) + messageHeaderLen
	return n > 0 && cap(w.chunk)-at >= n && &w.chunk[:at+1][at] == &data[0]
}

// WriteMessage appends a Message record to the open chunk, closing the chunk
// when it reaches the chunk size (unless it borrows payloads,
// WriteMessageBorrowed). m.Data is copied; m is not retained. It
// allocates nothing once the writer's buffers have grown to size.
func (w *Writer) WriteMessage(m *Message) error {
	if err := w.checkMessage(m); err != nil {
		return err
	}
	w.appendMessage(m)
	if w.ChunkFull() && len(w.lent) == 0 {
		if w.pipe != nil { // queued, compressed meanwhile; Flush would wait for it
			return w.writeChunk()
		}
		return w.Flush()
	}
	return nil
}

func (w *Writer) checkMessage(m *Message) error {
	if err := w.usable(); err != nil {
		return err
	}
	if int(m.ChannelID) >= len(w.channels) {
		return fmt.Errorf("%w: message on channel id %d (%d channels added)", ErrUnknownChannel, m.ChannelID, len(w.channels))
	}
	return nil
}

// chunkLen is the open chunk's uncompressed size: its records, borrowed
// payloads included.
func (w *Writer) chunkLen() int { return len(w.chunk) + w.lentBytes }

// ChunkFull reports whether the open chunk has reached the chunk size: a
// chunk that borrows payloads is closed by its lender
// (WriteChunkProvisional), not by WriteMessage.
func (w *Writer) ChunkFull() bool { return w.chunkLen() >= w.opt.ChunkSize }

// appendMessage appends m's record (its data copied, or in place after
// Reserve) to the open chunk, indexes and counts it.
func (w *Writer) appendMessage(m *Message) {
	w.noteMessage(m)
	if w.reserved(m.Data) {
		// the data is in place (Reserve): the header goes before it
		n := len(m.Data)
		w.chunk = appendMessageHeader(w.chunk, m)
		w.chunk = w.chunk[:len(w.chunk)+n]
	} else {
		w.chunk = AppendMessage(w.chunk, m)
	}
}

// noteMessage indexes the message about to be appended to the open chunk
// and adds it to the chunk's and the file's figures.
func (w *Writer) noteMessage(m *Message) {
	ch := m.ChannelID
	if len(w.idx[ch]) == 0 {
		w.touched = append(w.touched, ch)
	}
	w.idx[ch] = append(w.idx[ch], indexEntry{m.LogTime, uint64(w.chunkLen())})
	if w.chunkMsgs == 0 || m.LogTime < w.chunkStart {
		w.chunkStart = m.LogTime
	}
	if w.chunkMsgs == 0 || m.LogTime > w.chunkEnd {
		w.chunkEnd = m.LogTime
	}
	w.chunkMsgs++
	w.counts[ch]++
	if w.messages == 0 || m.LogTime < w.startTime {
		w.startTime = m.LogTime
	}
	if w.messages == 0 || m.LogTime > w.endTime {
		w.endTime = m.LogTime
	}
	w.messages++
}

// CanBorrow reports whether WriteMessageBorrowed borrows payloads: chunks
// written uncompressed, one at a time, to a FileWriter's write(2) path.
func (w *Writer) CanBorrow() bool {
	_, ok := w.w.(lendingSink)
	return ok && w.comp == nil && w.pipe == nil
}

// WriteMessageBorrowed is WriteMessage without the copy (when CanBorrow):
// the open chunk borrows m.Data, whose bytes go to the file straight from
// where they lie when the chunk is written (one writev of the chunk's
// records and its borrowed payloads, the CRC computed over them). The
// lender keeps them unchanged until then, or checks afterwards: it closes
// the chunk itself once ChunkFull (WriteMessage leaves a chunk that
// borrows open) with WriteChunkProvisional, then KeepChunk or
// TakeBackChunk. Without CanBorrow it is WriteMessage.
func (w *Writer) WriteMessageBorrowed(m *Message) error {
	if !w.CanBorrow() || len(m.Data) == 0 {
		return w.WriteMessage(m)
	}
	if err := w.checkMessage(m); err != nil {
		return err
	}
	w.noteMessage(m)
	w.chunk = appendMessageHeader(w.chunk, m)
	w.lent = append(w.lent, lentPayload{at: len(w.chunk), data: m.Data})
	w.lentBytes += len(m.Data)
	return nil
}

// WriteChunkProvisional writes the open chunk, which borrows payloads,
// provisionally: the Chunk record goes to the file (one writev from the
// chunk's records and the payloads where they lie), its MessageIndex
// records not yet. The lender then checks that no payload changed before
// the write returned and calls KeepChunk, or TakeBackChunk; no other call
// in between. A chunk that borrows nothing is written and kept.
func (w *Writer) WriteChunkProvisional() error { return w.writeProvisional(nil) }

// WriteChunkLent is WriteChunkProvisional for a sealed file whose lender
// checks its payloads again after the seal's worker hashed them (l, kept
// unchanged until the next WriteChunkLent, Flush or Close returns): the
// chunk is hashed on the worker after KeepChunk, while the next chunk is
// built; when l says a payload changed meanwhile, the worker hashes the
// chunk's bytes read back from the file (evidence.Hasher.Lend). Without
// a seal, or a file to read back from, it is WriteChunkProvisional.
func (w *Writer) WriteChunkLent(l evidence.Lender) error { return w.writeProvisional(l) }

// asyncMin is the write size from which the seal's Hasher hashes on its
// worker (evidence's): the write waits for it before its memory is reused.
const asyncMin = 64 << 10

func (w *Writer) writeProvisional(l evidence.Lender) error {
	if err := w.usable(); err != nil {
		return err
	}
	if len(w.lent) == 0 {
		return w.Flush()
	}
	sink := w.w.(lendingSink)
	iov := w.iov[:0]
	iov = append(iov, nil) // the Chunk record's header
	var crc uint32
	from := 0
	for _, p := range w.lent {
		iov = append(iov, w.chunk[from:p.at], p.data)
		from = p.at
	}
	if from < len(w.chunk) {
		iov = append(iov, w.chunk[from:])
	}
	for _, b := range iov[1:] {
		crc = crc32.Update(crc, crc32.IEEETable, b)
	}
	n := w.chunkLen()
	h, err := w.beginChunk(n, n, crc, w.chunkStart, w.chunkEnd)
	if err != nil {
		return err
	}
	w.prov = provisional{pending: true, pos: w.pos, crc: w.crc}
	w.crc = crc32.Update(w.crc, crc32.IEEETable, h)
	w.crc = crc32Combine(w.crc, crc, int64(n))
	iov[0] = h
	lent := w.opt.Seal != nil && l != nil && w.readBack
	if lent {
		// hashed after KeepChunk, from a copy of the head (the next
		// chunk's is built in w.head meanwhile)
		w.hk ^= 1
		w.heads[w.hk] = append(w.heads[w.hk][:0], h...)
		iov[0] = w.heads[w.hk]
	} else if w.opt.Seal != nil { // hashed from the memory the writev reads, while it does, before the lender checks it
		w.opt.Seal.Mark()
		w.opt.Seal.WriteAsync(iov...)
	}
	err = sink.Writev(iov, int64(len(h)+n))
	if lent && err == nil {
		w.held, w.heldAt, w.lender = true, int64(w.pos), l
		w.heldIov = append(w.heldIov[:0], iov...)
	} else if w.opt.Seal != nil {
		w.opt.Seal.Wait()
	}
	clear(iov) // holds no payload past the write
	w.iov = iov[:0]
	if err != nil {
		w.err = fmt.Errorf("mcap: write at offset %d: %w", w.pos, err)
		return w.err
	}
	w.pos += uint64(len(h) + n)
	return nil
}

// KeepChunk completes the chunk WriteChunkProvisional wrote: its
// MessageIndex records follow it.
func (w *Writer) KeepChunk() {
	if !w.prov.pending {
		return
	}
	w.prov.pending = false
	if w.held {
		w.opt.Seal.Lend(w.heldAt, w.lender, w.heldIov...)
		clear(w.heldIov)
		w.held, w.lender = false, nil
		// the worker reads this chunk's records: the next is built in
		// the other buffer
		if w.spareChunk == nil {
			w.spareChunk = make([]byte, 0, cap(w.chunk))
		}
		w.chunk, w.spareChunk = w.spareChunk, w.chunk
	}
	w.finishChunk()
}

// TakeBackChunk takes the chunk WriteChunkProvisional wrote out of the file
// (the file cut back to its start) and writes it again, its borrowed
// payloads from copies: each payload is copied, then keep(i) is asked
// whether payload i (in the order WriteMessageBorrowed took them) is to
// stay, as a reader checks a copy it made; those it rejects are left out.
// The chunk's indexes and the file's figures count what is written. Rare:
// it allocates.
func (w *Writer) TakeBackChunk(keep func(i int) bool) error {
	if !w.prov.pending {
		return fmt.Errorf("mcap: TakeBackChunk without a provisional chunk")
	}
	w.prov.pending = false
	if err := w.w.(lendingSink).Rewind(int64(w.prov.pos)); err != nil {
		w.err = fmt.Errorf("mcap: taking back the chunk at %d: %w", w.prov.pos, err)
		return w.err
	}
	w.pos, w.crc = w.prov.pos, w.prov.crc
	if w.held { // never hashed
		clear(w.heldIov)
		w.held, w.lender = false, nil
		w.opt.Seal.Wait() // rare: the chunk is rebuilt in new memory
	} else if w.opt.Seal != nil {
		if err := w.opt.Seal.Back(); err != nil {
			w.err = err
			return err
		}
	}
	w.chunks = w.chunks[:len(w.chunks)-1]
	// Copies first, then the question (a payload may change meanwhile).
	var safe []byte
	for _, p := range w.lent {
		safe = append(safe, p.data...)
	}
	kept := make([]bool, len(w.lent))
	for i := range w.lent {
		kept[i] = keep(i)
	}
	old, lent := w.chunk, w.lent
	// The open chunk as it was before its first record, then its records
	// again: the file's time range and counts are those of the chunks
	// written; every message of the chunk is counted again as re-added.
	w.chunk, w.lent, w.lentBytes = make([]byte, 0, cap(old)), nil, 0
	for _, ch := range w.touched {
		w.idx[ch] = w.idx[ch][:0]
	}
	w.touched = w.touched[:0]
	w.messages -= uint64(w.chunkMsgs)
	w.startTime, w.endTime = w.doneStart, w.doneEnd
	w.chunkMsgs = 0
	var m Message
	li, soff := 0, 0
	for o := 0; o < len(old); {
		op := Opcode(old[o])
		end := o + 1 + 8 + int(le.Uint64(old[o+1:]))
		if op != OpMessage {
			w.chunk = append(w.chunk, old[o:end]...)
			o = end
			continue
		}
		h := old[o+1+8 : o+messageHeaderLen]
		m.ChannelID, m.Sequence = le.Uint16(h), le.Uint32(h[2:])
		m.LogTime, m.PublishTime = le.Uint64(h[6:]), le.Uint64(h[14:])
		w.counts[m.ChannelID]--
		if li < len(lent) && lent[li].at == o+messageHeaderLen {
			n := len(lent[li].data)
			m.Data = safe[soff : soff+n]
			soff += n
			o += messageHeaderLen
			if !kept[li] {
				li++
				continue
			}
			li++
		} else {
			m.Data = old[o+messageHeaderLen : end]
			o = end
		}
		w.appendMessage(&m)
	}
	if len(w.chunk) == 0 {
		return nil
	}
	return w.writeChunk()
}

// AddMetadata writes a Metadata record (name and key/value pairs) to the data
// section, outside chunks, and indexes it in the summary. edr-lite uses
// "edr.trigger" and "edr.topic_stats".
func (w *Writer) AddMetadata(name string, kv map[string]string) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.drainChunks(0); err != nil { // the chunks closed before it come first
		return err
	}
	start := len(w.stage)
	w.stage = AppendMetadata(w.stage, name, kv)
	w.metadata = append(w.metadata, metadataIndex{
		offset: w.pos + uint64(start), length: uint64(len(w.stage) - start), name: name})
	if len(w.stage) >= stageFlush {
		return w.flushStage()
	}
	return nil
}

// AddAttachment writes an Attachment record (its CRC computed) to the data
// section, outside chunks, and indexes it in the summary (AttachmentIndex,
// Statistics.attachment_count). Large data is handed to the underlying
// writer as it is, not copied.
func (w *Writer) AddAttachment(a *Attachment) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.drainChunks(0); err != nil { // the chunks closed before it come first
		return err
	}
	start := len(w.stage)
	w.stage = append(w.stage, byte(OpAttachment))
	w.stage = appendU64(w.stage, uint64(8+8+4+len(a.Name)+4+len(a.MediaType)+8+len(a.Data)+4))
	fields := len(w.stage)
	w.stage = appendU64(w.stage, a.LogTime)
	w.stage = appendU64(w.stage, a.CreateTime)
	w.stage = appendString(w.stage, a.Name)
	w.stage = appendString(w.stage, a.MediaType)
	w.stage = appendU64(w.stage, uint64(len(a.Data)))
	crc := crc32.Update(crc32.ChecksumIEEE(w.stage[fields:]), crc32.IEEETable, a.Data)
	at := w.pos + uint64(start)
	if len(a.Data) < stageFlush {
		w.stage = append(w.stage, a.Data...)
	} else { // the staged bytes, then the data straight from the caller
		if err := w.flushStage(); err != nil {
			return err
		}
		w.crc = crc32.Update(w.crc, crc32.IEEETable, a.Data)
		if err := w.write(a.Data); err != nil {
			return err
		}
	}
	w.stage = appendU32(w.stage, crc)
	w.attached = append(w.attached, attachmentIndex{offset: at,
		length:  uint64(recordPrefixLen + 8 + 8 + 4 + len(a.Name) + 4 + len(a.MediaType) + 8 + len(a.Data) + 4),
		logTime: a.LogTime, createTime: a.CreateTime, size: uint64(len(a.Data)), name: a.Name, mediaType: a.MediaType})
	if len(w.stage) >= stageFlush {
		return w.flushStage()
	}
	return nil
}

// Flush closes the open chunk (if it holds any record), writes it with its
// MessageIndex records and hands all buffered bytes to the underlying
// writer. Calling it often makes small chunks.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if len(w.chunk) > 0 {
		if err := w.writeChunk(); err != nil {
			return err
		}
	}
	if err := w.drainChunks(0); err != nil {
		return err
	}
	return w.flushStage()
}

func (w *Writer) writeChunk() error {
	records := w.chunk
	if len(w.lent) > 0 { // a lender that does not check
		if err := w.WriteChunkProvisional(); err != nil {
			return err
		}
		w.KeepChunk()
		return nil
	}
	if w.pipe != nil {
		return w.queueChunk()
	}
	payload := records
	if w.comp != nil {
		var err error
		w.compBuf, err = w.comp.compress(w.compBuf[:0], records)
		if err != nil {
			w.err = err
			return err
		}
		payload = w.compBuf
	}
	start, end := w.chunkStart, w.chunkEnd
	if w.chunkMsgs == 0 {
		start, end = 0, 0
	}
	if err := w.emitChunk(records, payload, crc32.ChecksumIEEE(records), start, end); err != nil {
		return err
	}
	w.finishChunk()
	return nil
}

// finishChunk stages the MessageIndex records of the chunk just written,
// one per channel with messages, by channel id, entries sorted by log time
// (stable: equal times keep file order), and empties the open chunk.
func (w *Writer) finishChunk() {
	slices.Sort(w.touched)
	for _, ch := range w.touched {
		w.emitMessageIndex(ch, w.idx[ch])
		w.idx[ch] = w.idx[ch][:0]
	}
	w.endChunk()
	w.touched = w.touched[:0]
	w.chunk = w.chunk[:0]
	clear(w.lent) // holds no payload past the write
	w.lent, w.lentBytes = w.lent[:0], 0
	w.chunkEmptied()
}

// chunkEmptied notes that the open chunk is empty: the file's time range
// so far is that of the chunks written.
func (w *Writer) chunkEmptied() {
	w.chunkMsgs = 0
	w.doneStart, w.doneEnd = w.startTime, w.endTime
}

// emitChunk writes a Chunk record (its header, then the payload straight
// from its buffer) after the staged bytes, and starts its chunk index;
// the MessageIndex records follow (emitMessageIndex), then endChunk.
func (w *Writer) emitChunk(records, payload []byte, recordsCRC uint32, start, end uint64) error {
	h, err := w.beginChunk(len(records), len(payload), recordsCRC, start, end)
	if err != nil {
		return err
	}
	w.crc = crc32.Update(w.crc, crc32.IEEETable, h)
	if err := w.write(h); err != nil {
		return err
	}
	if len(payload) > 0 && len(payload) == len(records) && &payload[0] == &records[0] {
		// uncompressed: the records' CRC extends the running CRC without
		// a second pass over them
		w.crc = crc32Combine(w.crc, recordsCRC, int64(len(payload)))
	} else {
		w.crc = crc32.Update(w.crc, crc32.IEEETable, payload)
	}
	return w.write(payload)
}

// beginChunk hands the staged bytes to w, then starts the chunk index of a
// Chunk record at the offset reached and returns the record's bytes before
// its payload (in w.head); records and payload are the uncompressed and
// stored sizes.
func (w *Writer) beginChunk(records, payload int, recordsCRC uint32, start, end uint64) ([]byte, error) {
	if err := w.flushStage(); err != nil {
		return nil, err
	}
	h := w.head[:0]
	h = append(h, byte(OpChunk))
	h = appendU64(h, uint64(chunkFixedLen+4+len(w.opt.Compression)+8+payload))
	h = appendU64(h, start)
	h = appendU64(h, end)
	h = appendU64(h, uint64(records))
	h = appendU32(h, recordsCRC)
	h = appendString(h, w.opt.Compression)
	h = appendU64(h, uint64(payload))
	w.head = h
	w.chunks = append(w.chunks, chunkIndex{start: start, end: end, offset: w.pos,
		length: uint64(len(h) + payload), compressedSize: uint64(payload), uncompressedSize: uint64(records),
		miFrom: len(w.miChan)})
	return h, nil
}

// emitMessageIndex stages channel ch's MessageIndex record of the chunk
// just emitted, its entries sorted by log time first (stable: equal
// times keep file order).
func (w *Writer) emitMessageIndex(ch uint16, e []indexEntry) {
	if !slices.IsSortedFunc(e, cmpEntry) {
		slices.SortStableFunc(e, cmpEntry)
	}
	w.miChan = append(w.miChan, ch)
	w.miOff = append(w.miOff, w.pos+uint64(len(w.stage)))
	w.stage = append(w.stage, byte(OpMessageIndex))
	w.stage = appendU64(w.stage, uint64(2+4+len(e)*indexEntryLen))
	w.stage = appendU16(w.stage, ch)
	w.stage = appendU32(w.stage, uint32(len(e)*indexEntryLen))
	for _, x := range e {
		w.stage = appendU64(w.stage, x.logTime)
		w.stage = appendU64(w.stage, x.offset)
	}
}

// endChunk completes the chunk index of the chunk just emitted.
func (w *Writer) endChunk() {
	ci := &w.chunks[len(w.chunks)-1]
	ci.miTo = len(w.miChan)
	ci.miLength = uint64(len(w.stage))
}

func cmpEntry(a, b indexEntry) int {
	switch {
	case a.logTime < b.logTime:
		return -1
	case a.logTime > b.logTime:
		return 1
	}
	return 0
}

// Close writes the last chunk, DataEnd, the summary and summary-offset
// sections, the Footer and the closing magic, and flushes. It does not
// close the underlying writer. After Close the Writer refuses all calls.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if err := w.Flush(); err != nil {
		w.closed = true
		return err
	}
	if w.pipe != nil { // every chunk emitted: its compressors and buffers go back
		w.pipe.release(w.opt.Compression, w.opt.ChunkSize)
		w.pipe = nil
	}
	w.closed = true
	if w.opt.Seal != nil {
		w.beginSeal() // the seal's place, and its records after it held until it is made
	}
	w.stage = appendDataEnd(w.stage, w.crc) // crc covers everything before DataEnd
	if err := w.write(w.stage); err != nil {
		return err
	}
	w.stage = w.stage[:0]

	summaryStart := w.pos
	b := w.stage
	type group struct {
		op           Opcode
		start, count uint64
	}
	var groups []group
	mark := func(op Opcode, from int) {
		if len(b) > from {
			groups = append(groups, group{op, summaryStart + uint64(from), uint64(len(b) - from)})
		}
	}
	from := len(b)
	for i := range w.schemas {
		b = AppendSchema(b, &w.schemas[i])
	}
	mark(OpSchema, from)
	from = len(b)
	for i := range w.channels {
		b = AppendChannel(b, &w.channels[i])
	}
	mark(OpChannel, from)
	from = len(b)
	b = w.appendStatistics(b)
	mark(OpStatistics, from)
	from = len(b)
	for i := range w.chunks {
		b = w.appendChunkIndex(b, &w.chunks[i])
	}
	mark(OpChunkIndex, from)
	from = len(b)
	for _, a := range w.attached {
		var st int
		b, st = beginRecord(b, OpAttachmentIndex)
		b = appendU64(b, a.offset)
		b = appendU64(b, a.length)
		b = appendU64(b, a.logTime)
		b = appendU64(b, a.createTime)
		b = appendU64(b, a.size)
		b = appendString(b, a.name)
		b = appendString(b, a.mediaType)
		b = endRecord(b, st)
	}
	mark(OpAttachmentIndex, from)
	from = len(b)
	for _, m := range w.metadata {
		var st int
		b, st = beginRecord(b, OpMetadataIndex)
		b = appendU64(b, m.offset)
		b = appendU64(b, m.length)
		b = appendString(b, m.name)
		b = endRecord(b, st)
	}
	mark(OpMetadataIndex, from)
	summaryOffsetStart := summaryStart + uint64(len(b))
	for _, g := range groups {
		b = appendSummaryOffset(b, g.op, g.start, g.count)
	}
	b = appendFooterPrefix(b, summaryStart, summaryOffsetStart)
	b = appendU32(b, crc32.ChecksumIEEE(b))
	b = append(b, Magic[:]...)
	w.stage = b[:0]
	if err := w.write(b); err != nil || w.opt.Seal == nil {
		return err
	}
	return w.finishSeal()
}

func (w *Writer) appendStatistics(b []byte) []byte {
	b, st := beginRecord(b, OpStatistics)
	b = appendU64(b, w.messages)
	b = appendU16(b, uint16(len(w.schemas)))
	b = appendU32(b, uint32(len(w.channels)))
	b = appendU32(b, uint32(len(w.attached)))
	b = appendU32(b, uint32(len(w.metadata)))
	b = appendU32(b, uint32(len(w.chunks)))
	b = appendU64(b, w.startTime)
	b = appendU64(b, w.endTime)
	b = appendU32(b, uint32(len(w.channels)*(2+8)))
	for i, n := range w.counts {
		b = appendU16(b, uint16(i))
		b = appendU64(b, n)
	}
	return endRecord(b, st)
}

func (w *Writer) appendChunkIndex(b []byte, c *chunkIndex) []byte {
	b, st := beginRecord(b, OpChunkIndex)
	b = appendU64(b, c.start)
	b = appendU64(b, c.end)
	b = appendU64(b, c.offset)
	b = appendU64(b, c.length)
	b = appendU16U64Map(b, w.miChan[c.miFrom:c.miTo], w.miOff[c.miFrom:c.miTo])
	b = appendU64(b, c.miLength)
	b = appendString(b, w.opt.Compression)
	b = appendU64(b, c.compressedSize)
	b = appendU64(b, c.uncompressedSize)
	return endRecord(b, st)
}
