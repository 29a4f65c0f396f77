package dumpfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/edr-lite/edr-lite/jsonl"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// jsonlMagic is what a JSON-lines export starts with: its header line's
// first member, as jsonl.Export writes it.
var jsonlMagic = []byte(`{"format":"` + jsonl.FormatName + `"`)

// openJSONL opens a JSON-lines export as a Source: every line is checked
// and imported (jsonl.Import) into a temporary pack file, which Close
// removes, so the Source is the pack dump "edr-lite import" would make of
// it (the same messages, times, types, dump information and metadata).
func openJSONL(path string) (*Source, error) {
	tmp, err := importJSONLTemp(path)
	if err != nil {
		return nil, err
	}
	s, err := openPack(tmp)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	s.Path, s.Format, s.remove = path, FormatJSONL, tmp
	return s, nil
}

// openJSONLBytes is openJSONL over an export held in memory: it is
// imported into a pack dump in memory (about as large as its data).
func openJSONLBytes(name string, b []byte, _ mcap.ReaderOptions) (*Source, error) {
	var buf bytes.Buffer
	if _, err := jsonl.Import(bytes.NewReader(b), func(o pack.WriterOptions) (*pack.Writer, error) {
		return pack.NewStreamWriter(&buf, o)
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s, err := openPackBytes(name, buf.Bytes(), mcap.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	s.Format = FormatJSONL
	return s, nil
}

// importJSONLTemp imports the export at path into a new temporary pack
// file and returns its name; errors name path and the line.
func importJSONLTemp(path string) (string, error) {
	in, err := OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	f, err := os.CreateTemp("", "edr-lite-jsonl-*.pack")
	if err != nil {
		return "", err
	}
	_, err = jsonl.Import(in, func(o pack.WriterOptions) (*pack.Writer, error) { return pack.NewStreamWriter(f, o) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return f.Name(), nil
}

// jsonlInfo summarises a JSON-lines export as the pack dump it imports
// to; Size is the export's.
func jsonlInfo(path string) (*Info, error) {
	tmp, err := importJSONLTemp(path)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	in, err := packInfo(tmp)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	in.Path, in.Format, in.Size = path, FormatJSONL, st.Size()
	return in, nil
}

// walkJSONL walks the messages of a JSON-lines export in its order.
func walkJSONL(path string, fn func(m *Msg) error) error {
	s, err := openJSONL(path)
	if err != nil {
		return err
	}
	defer s.Close()
	var m Msg
	return s.InFileOrder(func(pm *Message) error {
		m = Msg{Topic: topicName(pack.Topic(pm.Name, pm.Channel)), TimeNs: pm.TimeNs, GenNs: pm.GenNs, Data: pm.Data, Type: pm.Type}
		return fn(&m)
	})
}

// errJSONLNotADump is what verify and recover say of a JSON-lines export.
var errJSONLNotADump = errors.New("dumpfile: a jsonl input is a JSON-lines export, not a dump file: nothing to verify or recover (edr-lite import --format jsonl checks every line)")

func verifyJSONL(path string) (*VerifyResult, error) {
	return nil, fmt.Errorf("%s: %w", path, errJSONLNotADump)
}

func recoverJSONL(in, _ string) (*RecoverResult, error) {
	return nil, fmt.Errorf("%s: %w", in, errJSONLNotADump)
}
