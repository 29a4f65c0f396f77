package daemon

import (
	"fmt"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/crypt"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/evidence/keyfile"
	"github.com/edr-lite/edr-lite/internal/config"
)

// keyedError is a configuration error that belongs to one key (check
// reports it there).
type keyedError struct {
	key string
	err error
}

func (e *keyedError) Error() string { return e.key + ": " + e.err.Error() }
func (e *keyedError) Unwrap() error { return e.err }

// evidenceConfig loads the [evidence] keys into dc: the signing key
// (dump.Config.Signer) and the earlier keys the chain may go on from.
func evidenceConfig(f *config.File, dc *dump.Config) error {
	ev := f.Evidence
	if len(ev.EncryptTo) > 0 {
		rs, err := crypt.ParseRecipients(ev.EncryptTo)
		if err != nil {
			return &keyedError{"evidence.encrypt_to", err}
		}
		if f.Upload.Parquet {
			return &keyedError{"upload.parquet", fmt.Errorf("with evidence.encrypt_to the recorder cannot read its own dumps to convert them: convert them where an identity is (edr-lite export --format parquet --identity)")}
		}
		mcapFormat := f.Recorder.Format == "mcap"
		dc.NewWriter = dump.EncryptedWriter(rs, mcapFormat, f.Recorder.MCAPKeepPacked)
		dc.Extension = dump.PackExt + crypt.Ext
		if mcapFormat {
			dc.Extension = dump.MCAPExt + crypt.Ext
		}
	}
	if ev.SignKey == "" {
		if ev.PreviousKeys != "" {
			return &keyedError{"evidence.previous_keys", fmt.Errorf("set without evidence.sign_key: signing is off")}
		}
		return nil
	}
	s, err := keyfile.LoadSigner(ev.SignKey)
	if err != nil {
		return &keyedError{"evidence.sign_key", err}
	}
	dc.Signer = s
	if ev.PreviousKeys != "" {
		k, err := keyfile.LoadKeys(ev.PreviousKeys)
		if err != nil {
			return &keyedError{"evidence.previous_keys", err}
		}
		dc.PreviousKeys = k
	}
	return nil
}

// signingWarning says that the dumps of f are not signed ("" when they
// are): nothing then shows a dump changed or deleted.
func signingWarning(f *config.File) string {
	if f.Evidence.SignKey != "" {
		return ""
	}
	dir := f.Recorder.DumpDir
	return fmt.Sprintf("signing is off: the dumps in %s are not signed or chained, so nothing shows that one was changed, cut or deleted (set evidence.sign_key; docs/evidence.md)", dir)
}

// signerKeys is the keyring of s's public key (empty without s): what the
// recorder checks its own dumps' signatures with.
func signerKeys(s *evidence.Signer) *evidence.Keyring {
	k := &evidence.Keyring{}
	if s != nil {
		k.Add(s.Public())
	}
	return k
}
