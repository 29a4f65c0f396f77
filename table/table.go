package table

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/schema"
)

// Table names besides the typed tables, which are named after their
// schema.
const (
	Messages = "messages" // every message of the dump: metadata columns only
	Dumps    = "dumps"    // one row per dump
)

// Ext is the extension of the files Write makes.
const Ext = ".parquet"

// Dump is one dump as the tables see it.
type Dump struct {
	ID     string // the dump's name: its file name without extension
	File   string // its file name
	Format string // pack, mcap
	Size   int64  // of the file
	Info   dumpinfo.Info
	Topics []Topic
	// Seal is the dump's signature (docs/evidence.md), nil when not
	// known: the dumps table's signature columns are then null.
	Seal *Seal
	// Walk calls fn for every message of the dump, in file order. The
	// message and its bytes are valid only during the call.
	Walk func(fn func(m *Message) error) error
}

// Seal is a dump's signature as the dumps table records it.
type Seal struct {
	Status  string // valid, invalid, unsigned, unknown key, not checked
	KeyID   string // the key that signed it ("" unsigned)
	Chain   string // its chain ("" none)
	Counter uint64 // its place in the chain (0 none)
	ID      string // the seal's ID, the next dump's Prev
	Prev    string // the seal ID of the dump before it in the chain
}

// Topic is one topic of a Dump.
type Topic struct {
	Name, Channel string
	Type          string // the recorded type name ("" when none)
	Messages      uint64
}

// Message is one message of a Dump.
type Message struct {
	Name, Channel string
	CaptureNs     int64 // the time edr-lite orders it by
	ProducerNs    int64 // 0 = unknown
	Data          []byte
}

// Types says what type a dump's topic carries. A dump source implements it;
// it answers false for a topic whose messages are opaque bytes.
type Types interface {
	TopicType(name, channel string) (schema.Type, bool)
}

// Options configure Write.
type Options struct {
	// Vehicle is the vehicle= partition (DefaultVehicle when "").
	Vehicle string
	// Types, when set, gives the type a dump's topics carry.
	Types Types
	// Schemas override Types by topic name ("name" or "name#channel"):
	// the --schema TOPIC=LAYOUTFILE of the export verb.
	Schemas map[string]schema.Type
	// Compression of the column chunks: "zstd" (default), "snappy",
	// "none".
	Compression string
	// NoSync skips the fsync of each file at its close: for files that are
	// thrown away after use (the upload queue's, made again after a
	// crash).
	NoSync bool
	// FileMode, when not 0, is the mode of the files (whatever the umask)
	// and of the directories Write creates, with search bits where there
	// is read (0640: 0750): the upload queue gives the dumps' mode. 0:
	// 0644 and 0755, less the umask.
	FileMode os.FileMode
}

// DefaultVehicle is the vehicle partition when none is given.
const DefaultVehicle = "unknown"

// File is one file Write made.
type File struct {
	Table string // Messages, Dumps or a typed table's name
	Path  string
	Rows  int64
	Size  int64
}

// Report says what Write did.
type Report struct {
	Files    []File
	Messages uint64 // messages read
	Bytes    uint64 // their payload bytes
	// Skipped lists, per typed topic, why some of its fields have no
	// column, or why the topic has no typed table (a schema that does not
	// decode).
	Skipped []string
	// Renamed lists, per typed topic, the fields whose column has another
	// name than ColumnName gives: one a fixed column, a partition
	// (Partitions) or an earlier field already has, compared without
	// case ("vehicle" -> "vehicle_").
	Renamed []string
}

// Partitions are the partition columns of the layout Write makes
// (TABLE/vehicle=/date=/): engines reading it with hive partitioning take
// their values from the path, so no column of the files may have their
// names.
var Partitions = []string{"vehicle", "date"}

// Write converts one dump into Parquet files under dir, in a partitioned
// layout every engine reads with hive partitioning:
//
//	dir/TABLE/vehicle=VEHICLE/date=YYYY-MM-DD/ID.parquet
//
// with TABLE Messages (every message), Dumps (one row) and one table per
// schema of the typed topics (their decoded fields as columns). date is
// the UTC date of the dump's first trigger (else of its start). It refuses
// to overwrite a file; on error the files written so far are removed.
func Write(d *Dump, dir string, o Options) (rep *Report, err error) {
	if o.Vehicle == "" {
		o.Vehicle = DefaultVehicle
	}
	if strings.ContainsAny(o.Vehicle, "/=") {
		return nil, fmt.Errorf("%w: vehicle %q: no '/' or '='", ErrOptions, o.Vehicle)
	}
	codec, err := codecOf(o.Compression)
	if err != nil {
		return nil, err
	}
	rep = &Report{}
	defer func() {
		if err != nil {
			for _, f := range rep.Files {
				os.Remove(f.Path)
			}
			rep.Files = nil
		}
	}()
	day := time.Unix(0, dumpTimeNs(d)).UTC().Format("2006-01-02")
	pathOf := func(table string) (string, error) {
		p := filepath.Join(dir, table, "vehicle="+o.Vehicle, "date="+day, d.ID+Ext)
		if _, err := os.Stat(p); err == nil {
			return "", fmt.Errorf("%s exists; refusing to overwrite", p)
		}
		return p, mkdirs(dir, filepath.Dir(p), o.FileMode)
	}
	w, err := newMessageWriters(d, &o, codec, pathOf, rep)
	if err != nil {
		return rep, err
	}
	err = d.Walk(func(m *Message) error {
		rep.Messages++
		rep.Bytes += uint64(len(m.Data))
		return w.add(m)
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, err
	}
	p, err := pathOf(Dumps)
	if err != nil {
		return rep, err
	}
	f, err := writeDumpRow(d, p, codec, !o.NoSync, o.FileMode)
	rep.Files = append(rep.Files, f)
	return rep, err
}

// mkdirs makes the directories from root (when it makes it) down to dir:
// with mode's search bits when mode is set (whatever the umask), else
// 0755.
func mkdirs(root, dir string, mode os.FileMode) error {
	if mode == 0 {
		return os.MkdirAll(dir, 0o755)
	}
	dm := mode.Perm() | (mode.Perm()&0o444)>>2
	_, err := os.Stat(root)
	rootMade := errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(dir, dm); err != nil {
		return err
	}
	for d := dir; len(d) > len(root) || (d == root && rootMade); d = filepath.Dir(d) {
		if err := os.Chmod(d, dm); err != nil {
			return err
		}
		if d == root {
			break
		}
	}
	return nil
}

// createFile creates path for writing, never over an existing file, with
// mode when set (whatever the umask), else 0644.
func createFile(path string, mode os.FileMode) (*os.File, error) {
	perm := mode
	if perm == 0 {
		perm = 0o644
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err == nil && mode != 0 {
		if err = f.Chmod(mode); err != nil {
			f.Close()
			os.Remove(path)
		}
	}
	return f, err
}

// dumpTimeNs is the time a dump is dated by: its first trigger's, else its
// window's start.
func dumpTimeNs(d *Dump) int64 {
	if len(d.Info.Triggers) > 0 {
		return d.Info.Triggers[0].TimeNs
	}
	return d.Info.StartNs
}

// ErrOptions is returned for invalid Options.
var ErrOptions = errors.New("table: invalid options")
