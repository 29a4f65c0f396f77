// Signed and chained dumps (Config.Signer; docs/evidence.md): the chain of
// the dump directory, each dump's seal, rotation recorded before a dump
// is deleted, and the leftovers of a crash taken into the chain.

package dump

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/durable"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// openChain opens the chain of the dump directory (Config.Signer set) and
// takes into it the leftovers a crash left between a dump's seal and its
// ledger entry.
func (d *Dumper) openChain(kept []string) error {
	c, notes, err := evidence.OpenChain(d.cfg.Dir, d.cfg.Signer, d.cfg.PreviousKeys, d.cfg.FileMode)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	d.chain, d.chainNotes = c, notes
	keys := &evidence.Keyring{}
	keys.Add(d.cfg.Signer.Public())
	for _, p := range kept {
		f, err := ReadSeal(p)
		if err != nil {
			continue // unreadable: recover's business
		}
		if v := evidence.Judge(f, keys); v.OK() {
			if ok, err := c.Adopt(*v.Seal, filepath.Base(p)); err != nil {
				d.chainFailed(err)
			} else if ok {
				d.chainNotes = append(d.chainNotes, fmt.Sprintf("the interrupted dump %s is #%d of the chain", filepath.Base(p), v.Seal.Link.Counter))
			}
		}
	}
	d.dir.Removing = d.Removing
	return nil
}

// sealerFor returns the sealer of the next dump (nil without signing).
func (d *Dumper) sealerFor() *evidence.Sealer {
	if d.chain == nil {
		return nil
	}
	f := evidence.FormatPack
	if strings.HasPrefix(d.cfg.Extension, MCAPExt) { // .mcap, .mcap.age
		f = evidence.FormatMCAP
	}
	s := evidence.NewSealer(d.cfg.Signer, f, d.chain.Next())
	if !d.cfg.KeepPriority {
		s.Async(lowerPriority) // hashing on a worker, a frame behind the writes, at the dumper's priority
	} else {
		s.Async(func() {})
	}
	return s
}

// sealed records the dump sealer sealed, tmp about to be renamed to
// final, in the chain, and with it the dumps the rotation after it will
// remove (one ledger write for both). A writer that did not seal (a
// NewWriter that ignores WriterOptions.Seal) or a ledger that cannot be
// written leaves the dump in place, unchained, and says so
// (Status.ChainErrors, LastError).
func (d *Dumper) sealed(sealer *evidence.Sealer, tmp, final string, res *Result) {
	if sealer == nil {
		return
	}
	seal, ok := sealer.Sealed()
	if !ok {
		d.chainFailed(fmt.Errorf("dump %s was written unsigned: its writer does not seal files", final))
		return
	}
	res.Seal = &seal
	var rotating []evidence.Removal
	if st, err := os.Stat(tmp); err == nil {
		// What the rotation would not know after all (the listing
		// failed) it records itself, as it deletes (Removing).
		del, _ := d.dir.RotationAfter(File{Name: filepath.Base(final), Path: final, Size: st.Size()}, d.cfg.MaxFiles, d.cfg.MaxTotalBytes, d.cfg.Keeper)
		for _, e := range del {
			rotating = append(rotating, evidence.Removal{File: filepath.Base(e.Path), Reason: e.Reason})
		}
	}
	if err := d.chain.Append(seal, filepath.Base(final), rotating...); err != nil {
		d.chainFailed(fmt.Errorf("dump %s is signed but not in the chain: %w", final, err))
	}
}

// Removing records in the chain that the dump at path is about to be
// deleted for reason (rotation's bound, or "delete_after_upload"): the
// directory's Removing hook, and the upload queue's before it deletes an
// uploaded dump. Without signing it does nothing.
func (d *Dumper) Removing(path, reason string) {
	if d.chain == nil {
		return
	}
	if err := d.chain.Rotated(filepath.Base(path), reason); err != nil {
		d.chainFailed(fmt.Errorf("rotating %s: %w (verify --chain will report it deleted)", path, err))
	}
}

func (d *Dumper) chainFailed(err error) {
	d.chainErrs.Add(1)
	s := err.Error()
	d.lastErr.Store(&s)
}

// ReadSeal finds the seal of the dump file at path (pack or MCAP, by its
// extension, a leftover's by the name before .tmp or .interrupted) and
// hashes what it covers.
func ReadSeal(path string) (evidence.Found, error) {
	f, err := os.Open(path)
	if err != nil {
		return evidence.Found{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return evidence.Found{}, err
	}
	if strings.HasSuffix(LeftoverName(path), MCAPExt) {
		return mcap.FindSeal(f, st.Size())
	}
	return pack.FindSeal(f, st.Size())
}

// EncryptedWriter returns the NewWriterFunc of dumps encrypted at rest to
// recipients (age; evidence/crypt): the format's stream writer (pack, or
// MCAP when mcapFormat, keepPacked as MCAPWriter's) into an age stream
// into the file. Payloads are copied out of the rings (an age stream
// cannot take a frame back); the seal, when signing, is of the plaintext.
// The Dumper's Extension must end in crypt.Ext.
func EncryptedWriter(recipients []age.Recipient, mcapFormat, keepPacked bool) NewWriterFunc {
	return func(path string, opts WriterOptions) (Writer, error) {
		f, err := newEncryptedFile(path, opts.SizeHint, recipients)
		if err != nil {
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		if mcapFormat {
			fo := mcap.Options{Library: opts.WriterName, Compression: opts.Compression, KeepPacked: keepPacked, Seal: opts.Seal}
			if fo.Compression == "none" {
				fo.Compression = ""
			}
			if opts.FrameSize > 0 {
				fo.ChunkSize = opts.FrameSize
			}
			w, err := mcap.NewPackWriter(f, fo)
			if err != nil {
				f.abort()
				return nil, fmt.Errorf("mcap dump %s: %w", path, err)
			}
			return &encryptedMCAP{mcapDump: &mcapDump{w: w, types: newTypeTracker(), minSize: MCAPFromRingMin}, f: f}, nil
		}
		w, err := pack.NewStreamWriter(f, packOptions(opts))
		if err != nil {
			f.abort()
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		return &encryptedPack{packWriter: &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize, types: newTypeTracker()}, f: f}, nil
	}
}

// encryptedFile is an age stream into a file written as the dump writers'
// files are (durable.File: preallocated from the size hint, writeback
// started as it fills, one fsync at the end). The ciphertext goes to the
// file from the File's writer thread (durable.Behind, two buffers), so
// the dumper encrypts the next megabyte while the kernel copies this one.
type encryptedFile struct {
	io.WriteCloser // the age stream
	d              *durable.File
	b              *durable.Behind
}

func newEncryptedFile(path string, sizeHint int64, recipients []age.Recipient) (*encryptedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	d := durable.New(f, path, durable.Options{Prealloc: sizeHint, Async: true})
	b := durable.NewBehind(d)
	w, err := age.Encrypt(b, recipients...)
	if err != nil {
		d.Abort()
		b.Release()
		return nil, err
	}
	return &encryptedFile{WriteCloser: w, d: d, b: b}, nil
}

// finish ends the age stream and makes the file durable.
func (e *encryptedFile) finish() error {
	defer e.b.Release() // after the File's last write: Flush, Finish or Abort waited for it
	err := e.WriteCloser.Close()
	if err == nil {
		err = e.b.Flush()
	}
	if err != nil {
		return errors.Join(err, e.d.Abort())
	}
	return e.d.Finish()
}

func (e *encryptedFile) abort() error {
	defer e.b.Release()
	return e.d.Abort()
}

// encryptedPack is a pack dump written into an age stream.
type encryptedPack struct {
	*packWriter
	f *encryptedFile
}

func (e *encryptedPack) Close() error {
	if err := e.packWriter.Close(); err != nil {
		return errors.Join(err, e.f.abort())
	}
	return e.f.finish()
}

func (e *encryptedPack) Abort() error { return errors.Join(e.packWriter.Abort(), e.f.abort()) }

// encryptedMCAP is an MCAP dump written into an age stream.
type encryptedMCAP struct {
	*mcapDump
	f *encryptedFile
}

func (e *encryptedMCAP) Close() error {
	if err := e.mcapDump.Close(); err != nil {
		return errors.Join(err, e.f.abort())
	}
	return e.f.finish()
}

func (e *encryptedMCAP) Abort() error { return errors.Join(e.mcapDump.Abort(), e.f.abort()) }
