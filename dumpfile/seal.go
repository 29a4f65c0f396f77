package dumpfile

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/edr-lite/edr-lite/dumpinfo"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// ReadSeal finds the seal of the dump file at path (pack or MCAP; the
// other formats carry none: unsigned) and hashes the bytes it covers
// (evidence.Found). It reads the whole file when it is sealed. A file of
// no known format (its magic changed) that holds a seal of either is
// judged by it.
func ReadSeal(path string) (evidence.Found, error) {
	format, err := Detect(path)
	if errors.Is(err, ErrUnknownFormat) {
		for _, f := range []string{FormatPack, FormatMCAP} {
			if found, ferr := readSeal(path, f); ferr == nil && found.Seal != nil {
				return found, nil
			}
		}
	}
	if err != nil {
		return evidence.Found{}, err
	}
	if format != FormatPack && format != FormatMCAP {
		return evidence.Found{Complete: true}, nil
	}
	return readSeal(path, format)
}

func readSeal(path, format string) (evidence.Found, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return evidence.Found{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return evidence.Found{}, err
	}
	var found evidence.Found
	if format == FormatMCAP {
		found, err = mcap.FindSeal(f, st.Size())
	} else {
		found, err = pack.FindSeal(f, st.Size())
	}
	if err != nil {
		return found, fmt.Errorf("%s: reading its seal: %w", path, err)
	}
	return found, nil
}

// CheckSeal judges the seal of the dump file at path against keys (none:
// the signature is not checked).
func CheckSeal(path string, keys *evidence.Keyring) (evidence.Verdict, error) {
	f, err := ReadSeal(path)
	if err != nil {
		return evidence.Verdict{}, err
	}
	return evidence.Judge(f, keys), nil
}

// Stamp is what a verb that makes a dump from other files writes into it
// (docs/evidence.md): its provenance (evidence.ProvenanceName: the verb,
// each source's SHA-256 and signature as found), and, with Sign, a seal
// of the operator's key (no chain: the file is no recorder's dump). A nil
// *Stamp writes neither.
type Stamp struct {
	Provenance *dumpinfo.Provenance
	Sign       *evidence.Signer
}

// NewStamp describes the sources (files) of a dump made by madeBy: each
// one's size, SHA-256 and signature, checked with keys (none: "not
// checked" for a sealed source). It reads every source whole.
func NewStamp(madeBy string, sources []string, keys *evidence.Keyring, sign *evidence.Signer) (*Stamp, error) {
	p := &dumpinfo.Provenance{MadeBy: madeBy, Sources: []dumpinfo.Source{}}
	if sign != nil {
		p.SignedBy = sign.ID().String()
	}
	for _, path := range sources {
		src := dumpinfo.Source{File: filepath.Base(path), Signature: evidence.Unsigned.String()}
		if st, err := os.Stat(path); err == nil && st.IsDir() { // a folder of camera images
			src.Reason = "a folder: not hashed"
			p.Sources = append(p.Sources, src)
			continue
		}
		sum, size, err := fileSHA256(path)
		if err != nil {
			return nil, err
		}
		src.SHA256, src.Size = sum, size
		v, err := CheckSeal(path, keys)
		switch {
		case errors.Is(err, ErrUnknownFormat): // the verb says what it is not
		case err == nil:
			src.Signature, src.Reason = v.Status.String(), v.Reason
			if s := v.Seal; s != nil {
				src.KeyID, src.Seal = s.Key.String(), s.ID().String()
				if !s.Link.Chain.IsZero() {
					src.Chain, src.Counter = s.Link.Chain.String(), s.Link.Counter
				}
			}
		default:
			src.Signature, src.Reason = evidence.Invalid.String(), err.Error()
		}
		p.Sources = append(p.Sources, src)
	}
	return &Stamp{Provenance: p, Sign: sign}, nil
}

func fileSHA256(path string) (string, int64, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// blob is the provenance as its metadata's bytes (JSON).
func (s *Stamp) blob() []byte {
	b, _ := json.Marshal(s.Provenance) // strings and integers only
	return b
}

// sealer is a sealer of the operator's key for an output of format f
// (nil without Sign).
func (s *Stamp) sealer(f evidence.Format) *evidence.Sealer {
	if s == nil || s.Sign == nil {
		return nil
	}
	return evidence.NewSealer(s.Sign, f, evidence.Link{})
}

// ReadProvenance reads the provenance of the dump at path (nil: it has
// none, a recorder's own dump or a file of another format).
func ReadProvenance(path string) (*dumpinfo.Provenance, error) {
	src, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var b []byte
	if r := src.Pack(); r != nil {
		b, _ = r.Metadata(evidence.ProvenanceName)
	} else if mp := src.MCAP(); mp != nil {
		names, data := mp.Sections()
		for i, n := range names {
			if n == evidence.ProvenanceName {
				b = data[i]
			}
		}
	}
	if b == nil {
		return nil, nil
	}
	var p dumpinfo.Provenance
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: its %s metadata: %w", path, evidence.ProvenanceName, err)
	}
	return &p, nil
}

// metadata is the stamp as pack metadata (nil for a nil Stamp).
func (s *Stamp) metadata() map[string][]byte {
	if s == nil {
		return nil
	}
	return map[string][]byte{evidence.ProvenanceName: s.blob()}
}

// mcapMetadata is the stamp as MCAP metadata records, the provenance as
// mcap.PackWriter.AddMetadata writes a pack blob (nil for a nil Stamp).
func (s *Stamp) mcapMetadata() map[string]map[string]string {
	if s == nil {
		return nil
	}
	return map[string]map[string]string{evidence.ProvenanceName: {"base64": base64.StdEncoding.EncodeToString(s.blob())}}
}
