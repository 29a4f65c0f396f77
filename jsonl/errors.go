package jsonl

import "errors"

// ErrFormat reports a malformed JSON-lines export (the error names the line
// and field), or a dump that cannot be written as one.
var ErrFormat = errors.New("jsonl: bad JSON-lines input")
