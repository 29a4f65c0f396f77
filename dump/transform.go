package dump

import (
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
)

// MessageWriter is where a write-path transform writes: the dump file's
// Writer or the next transform's Stage. data is valid only during the call.
type MessageWriter interface {
	WriteMessage(topic *ingest.TopicInfo, genNs, captureNs int64, data []byte) error
}

// Transform is a write-path transform (Config.Transforms): it sees every
// message of a dump between the time-ordered merge of the windows and the
// file, and may hold, reorder, drop, add or rewrite messages. EventOrder is
// one. It is a different role from a Hook, which hears of a dump after the
// file is durable and never rewrites its frames.
//
// One Transform serves every dump; NewStage is called once per dump, on the
// dumper's goroutine, and the Stage is used by that goroutine only. A
// Transform must be safe for concurrent use only if it is shared between
// Dumpers.
type Transform interface {
	// NewStage starts one dump: the stage writes to next.
	NewStage(next MessageWriter) Stage
}

// Stage is one dump's instance of a Transform.
type Stage interface {
	// WriteMessage takes one message, in the order the previous stage
	// wrote it (capture order from the merge). data is valid only during
	// the call: a stage that holds a message copies it.
	MessageWriter
	// Flush writes whatever the stage still holds; called once after the
	// last message (not when the dump failed before).
	Flush() error
	// Account adds what the stage did to the dump's self-description
	// before it is written (per-topic counts in info.Topics, by
	// dumpinfo.TopicAccount.Topic); called once after Flush.
	Account(info *dumpinfo.Info)
}

// stageChain is the dump's writer behind Config.Transforms: messages enter
// the first stage, the last writes to the file.
type stageChain struct {
	Writer
	first  MessageWriter
	stages []Stage
}

func newStageChain(w Writer, ts []Transform) *stageChain {
	c := &stageChain{Writer: w}
	var next MessageWriter = w
	c.stages = make([]Stage, len(ts))
	for i := len(ts) - 1; i >= 0; i-- {
		c.stages[i] = ts[i].NewStage(next)
		next = c.stages[i]
	}
	c.first = next
	return c
}

func (c *stageChain) WriteMessage(t *ingest.TopicInfo, gen, capNs int64, data []byte) error {
	return c.first.WriteMessage(t, gen, capNs, data)
}

// flush flushes the stages in order: what the first releases goes through
// the later ones before they flush.
func (c *stageChain) flush() error {
	for _, s := range c.stages {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func (c *stageChain) account(info *dumpinfo.Info) {
	for _, s := range c.stages {
		s.Account(info)
	}
}
