package daemon

import (
	"fmt"
	"os"
	"strings"

	"github.com/edr-lite/edr-lite/evidence/keyfile"
	"github.com/edr-lite/edr-lite/internal/config"
)

// ExposedSecrets returns a problem for each secret the configuration file
// at path holds (upload.secret_key, control.http_token) when other local
// users may read the file (mode o+r): nil when it holds none or is
// private. "edr-lite config check" refuses such a file; "edr-lite run"
// warns and runs (a recorder that refuses to start records nothing;
// docs/security.md).
func ExposedSecrets(path string, f *config.File) config.Errors {
	ps := exposedKey(f)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o004 == 0 {
		return ps
	}
	for _, s := range []struct{ key, value string }{
		{"upload.secret_key", f.Upload.SecretKey},
		{"control.http_token", f.Control.HTTPToken},
	} {
		if s.value != "" {
			ps = append(ps, f.Problem(s.key, "a secret in a file every local user can read (mode %04o): chmod 600 %s, or give it in the environment (AWS_SECRET_ACCESS_KEY for the upload's)",
				st.Mode().Perm(), path))
		}
	}
	return ps
}

// exposedKey is a problem when the signing key file (evidence.sign_key)
// is readable by every local user: whoever reads it can sign dumps the
// vehicle never wrote.
func exposedKey(f *config.File) config.Errors {
	p := f.Evidence.SignKey
	if p == "" {
		return nil
	}
	perm, exposed, err := keyfile.Exposed(p)
	if err != nil || !exposed {
		return nil // unreadable: Check says so
	}
	return config.Errors{f.Problem("evidence.sign_key", "the signing key %s can be read by every local user (mode %04o): whoever reads it can sign dumps this recorder never wrote: chmod 600 %s", p, perm, p)}
}

// SecretsWarning is ExposedSecrets said in one line for a log, "" when
// nothing is exposed.
func SecretsWarning(path string, f *config.File) string {
	var keys, out []string
	for _, p := range ExposedSecrets(path, f) {
		if p.Key == "evidence.sign_key" {
			out = append(out, p.Msg)
		} else {
			keys = append(keys, p.Key)
		}
	}
	if len(keys) > 0 {
		out = append([]string{fmt.Sprintf("%s holds secrets (%s) and every local user can read it: chmod 600 %s", path, strings.Join(keys, ", "), path)}, out...)
	}
	return strings.Join(out, "; ")
}
