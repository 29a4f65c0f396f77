// Sealed MCAP files (docs/evidence.md): the Writer hashes every byte it
// writes as it writes it; Close writes an "edr.seal" Metadata record as
// the data section's last record, right before DataEnd, signed over every
// byte of the file but its own and DataEnd's data_section_crc (which
// covers the seal, so it is hashed as zeros and checked as a CRC).
// FindSeal finds a file's seal and hashes what it covers.

package mcap

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/edr-lite/edr-lite/evidence"
)

// sealState is what a Writer keeps while it seals.
type sealState struct {
	holding bool   // Close's records after the seal go to tail
	tail    []byte // DataEnd, the summary, the footer, the magic
	at      uint64 // where the seal record goes
	length  int    // its length
}

// sealRecord encodes s as its Metadata record.
func sealRecord(s *evidence.Seal) []byte {
	return AppendMetadata(nil, evidence.MetadataName, s.Map())
}

// beginSeal reserves the seal record's place at the end of the data
// section (its offsets have a fixed width, so its length is known before
// it is signed), indexes it, and holds what Close writes after it.
func (w *Writer) beginSeal() {
	w.seal.at = w.pos
	ph := w.opt.Seal.PlaceholderSeal(int64(w.pos), 0)
	w.seal.length = len(sealRecord(&ph))
	w.metadata = append(w.metadata, metadataIndex{offset: w.pos, length: uint64(w.seal.length), name: evidence.MetadataName})
	w.pos += uint64(w.seal.length)
	w.seal.holding = true
}

// finishSeal hashes the records held after the seal (DataEnd's CRC as
// zeros), signs, and writes the seal record and those records, DataEnd's
// CRC now covering the seal.
func (w *Writer) finishSeal() error {
	tail := w.seal.tail
	w.seal.holding, w.seal.tail = false, nil
	if len(tail) < recordPrefixLen+dataEndLen || Opcode(tail[0]) != OpDataEnd {
		return fmt.Errorf("BUG: mcap: the records after the seal do not start with DataEnd")
	}
	crcAt := recordPrefixLen
	le.PutUint32(tail[crcAt:], 0)
	w.opt.Seal.Write(tail)
	s, err := w.opt.Seal.Finish(int64(w.seal.at))
	if err != nil {
		w.err = err
		return err
	}
	rec := sealRecord(&s)
	if len(rec) != w.seal.length {
		w.err = fmt.Errorf("BUG: mcap: seal record of %d bytes, %d reserved", len(rec), w.seal.length)
		return w.err
	}
	le.PutUint32(tail[crcAt:], crc32.Update(w.crc, crc32.IEEETable, rec))
	for _, b := range [][]byte{rec, tail} {
		if _, err := w.w.Write(b); err != nil {
			w.err = fmt.Errorf("mcap: write at offset %d: %w", w.seal.at, err)
			return w.err
		}
	}
	return nil
}

// sealName is how a seal record's name is encoded: FindSeal looks for it.
var sealName = append(le.AppendUint32(nil, uint32(len(evidence.MetadataName))), evidence.MetadataName...)

// sealSignature is the encoding of a seal record's signature key and the
// length of its value: a second mark of a seal record, so that one
// changed byte never hides that a file had a seal.
var sealSignature = append(append(le.AppendUint32(nil, 9), "signature"...), le.AppendUint32(nil, 2*evidence.SignatureSize)...)

// maxSealRecord bounds what FindSeal takes for a seal record.
const maxSealRecord = 4 << 10

// FindSeal finds the seal of the MCAP file r (size bytes) and hashes the
// bytes it covers, checking DataEnd's data_section_crc on the way (a
// changed CRC is Found.Problem). It reads the file once when it ends with
// its footer; otherwise (cut short, extended) it searches the file for
// the seal first. Errors are I/O errors.
func FindSeal(r io.ReaderAt, size int64) (evidence.Found, error) {
	f := evidence.Found{Size: size}
	at, end, seal, problem, complete, err := locateSeal(r, size)
	f.Complete = complete
	if err != nil || seal == nil {
		f.Problem = problem
		return f, err
	}
	f.Seal = seal
	// DataEnd follows the seal: its CRC field is hashed as zeros.
	var de [recordPrefixLen + dataEndLen]byte
	if end+int64(len(de)) > size {
		f.Problem = fmt.Sprintf("the file ends after its seal at %d, without DataEnd", at)
	} else if _, err := r.ReadAt(de[:], end); err != nil {
		return f, err
	} else if Opcode(de[0]) != OpDataEnd || le.Uint64(de[1:]) != dataEndLen {
		f.Problem = fmt.Sprintf("the record after the seal at %d is not DataEnd: changed", at)
	}
	h := evidence.NewHasher()
	var c uint32
	buf := make([]byte, min(1<<20, size))
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return f, err
		}
		b := buf[:n]
		for len(b) > 0 {
			var k int64
			switch {
			case off < at: // data before the seal: hashed and under the CRC
				k = min(int64(len(b)), at-off)
				h.Write(b[:k])
				c = crc32.Update(c, crc32.IEEETable, b[:k])
			case off < end: // the seal: under the CRC only
				k = min(int64(len(b)), end-off)
				c = crc32.Update(c, crc32.IEEETable, b[:k])
			case off >= end+recordPrefixLen && off < end+recordPrefixLen+dataEndLen && f.Problem == "":
				k = min(int64(len(b)), end+recordPrefixLen+dataEndLen-off)
				var zero [dataEndLen]byte
				h.Write(zero[:k])
			default:
				k = int64(len(b))
				if off < end+recordPrefixLen && f.Problem == "" {
					k = min(k, end+recordPrefixLen-off)
				}
				h.Write(b[:k])
			}
			b, off = b[k:], off+k
		}
	}
	f.Digest, f.Hashed = h.Sum(), h.Len()
	if f.Problem == "" {
		if stored := le.Uint32(de[recordPrefixLen:]); stored != c {
			f.Problem = fmt.Sprintf("DataEnd's data_section_crc at %d is %#08x, the data section's CRC is %#08x: changed", end+recordPrefixLen, stored, c)
		}
	}
	return f, nil
}

// locateSeal finds the seal record [at, end): right before DataEnd when
// the file ends with its footer (complete), else by searching the file.
func locateSeal(r io.ReaderAt, size int64) (at, end int64, seal *evidence.Seal, problem string, complete bool, err error) {
	tailLen := int64(footerRecordLen + magicLen)
	if size >= int64(magicLen)+tailLen {
		t := make([]byte, tailLen)
		if _, err := r.ReadAt(t, size-tailLen); err != nil {
			return 0, 0, nil, "", false, err
		}
		if [8]byte(t[footerRecordLen:]) == Magic && Opcode(t[0]) == OpFooter && le.Uint64(t[1:]) == footerLen {
			complete = true
			de := size - tailLen - recordPrefixLen - dataEndLen
			if ss := int64(le.Uint64(t[recordPrefixLen:])); ss != 0 {
				de = ss - recordPrefixLen - dataEndLen
			}
			var deRec [recordPrefixLen]byte
			if de > int64(magicLen) && de <= size-recordPrefixLen {
				if _, err := r.ReadAt(deRec[:], de); err != nil {
					return 0, 0, nil, "", complete, err
				}
			}
			if Opcode(deRec[0]) == OpDataEnd && le.Uint64(deRec[1:]) == dataEndLen {
				from := max(int64(magicLen), de-maxSealRecord)
				win := make([]byte, de-from)
				if _, err := r.ReadAt(win, from); err != nil {
					return 0, 0, nil, "", complete, err
				}
				if i := bytes.LastIndex(win, sealName); i >= recordPrefixLen {
					s, why := sealRecordAt(win[i-recordPrefixLen:], from+int64(i-recordPrefixLen))
					if s != nil && s.At+int64(len(sealRecord(s))) == de {
						return s.At, de, s, "", complete, nil
					}
					if why == "" {
						why = fmt.Sprintf("the seal record at %d does not end where DataEnd starts (%d)", from+int64(i-recordPrefixLen), de)
					}
					problem = why
				} else if j := bytes.LastIndex(win, sealSignature); j >= 0 {
					problem = fmt.Sprintf("a damaged seal record before %d (its name was changed)", from+int64(j))
				}
				if problem == "" {
					return 0, 0, nil, "", complete, nil // closed without a seal: unsigned
				}
			}
		}
	}
	at, end, seal, why, err := scanSeal(r, size)
	if seal == nil && problem == "" {
		problem = why
	}
	return at, end, seal, problem, complete, err
}

// sealRecordAt parses the seal record at the start of b (at offset at):
// nil and a reason when it does not check out.
func sealRecordAt(b []byte, at int64) (*evidence.Seal, string) {
	if len(b) < recordPrefixLen || Opcode(b[0]) != OpMetadata {
		return nil, fmt.Sprintf("the seal record at %d is damaged (not a Metadata record)", at)
	}
	n := le.Uint64(b[1:])
	if n > maxSealRecord || uint64(len(b)-recordPrefixLen) < n {
		return nil, fmt.Sprintf("the seal record at %d is damaged (length %d)", at, n)
	}
	d := dec{b: b[recordPrefixLen : recordPrefixLen+n]}
	name, kv := d.str(), d.strMap()
	if d.bad || len(d.b) != 0 || name != evidence.MetadataName {
		return nil, fmt.Sprintf("the seal record at %d is damaged (its fields do not parse)", at)
	}
	s, err := evidence.ParseMap(kv)
	if err != nil {
		return nil, fmt.Sprintf("the seal record at %d: %v", at, err)
	}
	if !bytes.Equal(sealRecord(&s), b[:recordPrefixLen+n]) {
		return nil, fmt.Sprintf("the seal record at %d is not in its one encoding: changed", at)
	}
	if s.Format != evidence.FormatMCAP {
		return nil, fmt.Sprintf("the seal record at %d is the seal of a %s file", at, s.Format)
	}
	if s.At != at {
		return nil, fmt.Sprintf("the seal record at %d says it lies at %d: moved", at, s.At)
	}
	return &s, ""
}

// scanSeal searches r for seal records and returns the last that checks
// out, or why the last that looked like one did not.
func scanSeal(r io.ReaderAt, size int64) (at, end int64, seal *evidence.Seal, problem string, err error) {
	const chunk = 1 << 20
	buf := make([]byte, min(chunk+maxSealRecord, size))
	for off := int64(0); off < size; off += chunk {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, nil, "", err
		}
		b := buf[:n]
		for i := 0; i < min(n, chunk); {
			j := bytes.Index(b[i:], sealName)
			if j < 0 || i+j >= chunk {
				break
			}
			i += j
			if i >= recordPrefixLen {
				start := off + int64(i-recordPrefixLen)
				if s, why := sealRecordAt(b[i-recordPrefixLen:], start); s != nil {
					at, end, seal, problem = start, start+int64(len(sealRecord(s))), s, ""
				} else {
					problem = why
				}
			}
			i++
		}
	}
	return at, end, seal, problem, nil
}

// addStamp writes a salvage's stamp records (RecoverOptions.Metadata), by
// name.
func (s *salvager) addStamp(w *Writer) error {
	names := make([]string, 0, len(s.stamp.Metadata))
	for n := range s.stamp.Metadata {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := w.AddMetadata(n, s.stamp.Metadata[n]); err != nil {
			return err
		}
	}
	return nil
}

// stamped reports whether the input's metadata name is left out of an
// export: the input's seal, or a name the stamp replaces.
func (o *ExportOptions) stamped(name string) bool {
	_, ok := o.Stamp[name]
	return ok || name == evidence.MetadataName
}

// addStamp writes an export's stamp records, by name.
func (o *ExportOptions) addStamp(w *Writer) error {
	return (&salvager{stamp: RecoverOptions{Metadata: o.Stamp}}).addStamp(w)
}
