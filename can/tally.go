package can

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// What a DBC makes of a frame (DBC.Match).
const (
	Decodable = iota // a message of the DBC, with its bytes
	NoSignals        // a remote request or an error frame: no data to decode
	Unknown          // no message of the DBC has the frame's ID
	Short            // the frame has fewer bytes than its message
)

// Match returns the message f decodes to and Decodable, or why it does
// not decode (NoSignals, Unknown, Short; the message of a Short frame
// is returned too). Every decoding of frames by DBC asks it: a bus as it
// records, a dump's accounting, the offline verbs' --dbc.
func (d *DBC) Match(f *Frame) (*Message, int) {
	if f.Flags&(RTR|ErrorFrame) != 0 {
		return nil, NoSignals
	}
	m := d.Lookup(f)
	switch {
	case m == nil:
		return nil, Unknown
	case int(f.Len) < m.Size:
		return m, Short
	}
	return m, Decodable
}

// Tally counts what a DBC makes of frames: decoded, of an ID it lacks,
// too short, with the first defaults.CANMaxUndecodableIDs distinct IDs of
// each (29-bit ones with bit 31 set). Frames without data (NoSignals) are
// not counted. It is the accounting of a dump's frame topic and of the
// offline decoding (docs/can.md, "Accounting"); a Bus keeps its own
// concurrent counters. A Tally is not safe for concurrent use.
type Tally struct {
	Decoded, Unknown, Short uint64
	UnknownIDs, ShortIDs    []uint32
}

// Add counts f as d makes of it and returns the message it decodes to
// (nil when it does not).
func (t *Tally) Add(d *DBC, f *Frame) *Message {
	m, why := d.Match(f)
	switch why {
	case Decodable:
		t.Decoded++
		return m
	case Unknown:
		t.Unknown++
		t.UnknownIDs = addID(t.UnknownIDs, key(f.ID, f.Flags&Extended != 0))
	case Short:
		t.Short++
		t.ShortIDs = addID(t.ShortIDs, key(f.ID, f.Flags&Extended != 0))
	}
	return nil
}

func addID(ids []uint32, k uint32) []uint32 {
	if len(ids) >= defaults.CANMaxUndecodableIDs || slices.Contains(ids, k) {
		return ids
	}
	return append(ids, k)
}

// IDName spells an identifier as Tally and BusStats keep it (bit 31 set
// for a 29-bit one): "7FF", "18FEF100x" (the candump notation, with an x
// after a 29-bit one as topics spell it).
func IDName(k uint32) string {
	if k&(1<<31) != 0 {
		return fmt.Sprintf("%08Xx", k&MaxExtendedID)
	}
	return fmt.Sprintf("%03X", k)
}

// IDNames spells ids (IDName).
func IDNames(ids []uint32) []string {
	var out []string
	for _, id := range ids {
		out = append(out, IDName(id))
	}
	return out
}

// Account returns t as a dump's accounting of a frame topic decoded by
// the DBC d.
func (t *Tally) Account(d *DBC) *dumpinfo.CANAccount {
	return &dumpinfo.CANAccount{DBC: filepath.Base(d.Name), Decoded: t.Decoded, Unknown: t.Unknown, Short: t.Short,
		UnknownIDs: IDNames(t.UnknownIDs), ShortIDs: IDNames(t.ShortIDs)}
}
