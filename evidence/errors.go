package evidence

import "errors"

var (
	// ErrMalformed: a seal or a ledger is not well formed.
	ErrMalformed = errors.New("evidence: malformed")
	// ErrUnsupported: a seal or ledger of a newer version or another
	// algorithm.
	ErrUnsupported = errors.New("evidence: unsupported")
	// ErrLedger: a chain ledger cannot be read or does not verify.
	ErrLedger = errors.New("evidence: chain ledger")
)
