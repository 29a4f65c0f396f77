package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// JSON output carries times as int64 nanoseconds since the epoch, exact but
// unreadable, and past what a float64 holds (jq 1.6 rounds 19-digit
// integers). withTimes adds beside every such field a readable copy: a
// timestamp "X_ns" gets "X" in RFC 3339 (UTC, nanoseconds), a duration
// (durationKeys) gets "X" in Go's duration form ("500ms"). A zero time
// means "unknown" and gets no copy. Key order is kept.

// durationKeys are the *_ns fields that hold durations, not times.
var durationKeys = map[string]bool{"pre_ns": true, "post_ns": true, "duration_ns": true}

// rfc3339 formats a time the way every JSON output spells it.
func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// withTimes rewrites a JSON document (as json.Marshal writes it) with the
// readable copies added.
func withTimes(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var b bytes.Buffer
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if err := copyJSON(dec, &b, tok); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func copyJSON(dec *json.Decoder, b *bytes.Buffer, tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok {
		return writeScalar(b, tok)
	}
	switch d {
	case '{':
		b.WriteByte('{')
		for n := 0; dec.More(); n++ {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			vt, err := dec.Token()
			if err != nil {
				return err
			}
			if n > 0 {
				b.WriteByte(',')
			}
			writeScalar(b, key)
			b.WriteByte(':')
			if err := copyJSON(dec, b, vt); err != nil {
				return err
			}
			if num, ok := vt.(json.Number); ok {
				if k, v := readableTime(key, num); k != "" {
					b.WriteByte(',')
					writeScalar(b, k)
					b.WriteByte(':')
					writeScalar(b, v)
				}
			}
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for n := 0; dec.More(); n++ {
			vt, err := dec.Token()
			if err != nil {
				return err
			}
			if n > 0 {
				b.WriteByte(',')
			}
			if err := copyJSON(dec, b, vt); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return fmt.Errorf("unexpected %v", d)
	}
	_, err := dec.Token() // the closing delimiter
	return err
}

func writeScalar(b *bytes.Buffer, tok json.Token) error {
	switch v := tok.(type) {
	case json.Number:
		b.WriteString(v.String())
		return nil
	case nil:
		b.WriteString("null")
		return nil
	}
	out, err := json.Marshal(tok)
	b.Write(out)
	return err
}

// readableTime returns the key and value of the readable copy of field
// key, or "" when it has none.
func readableTime(key string, num json.Number) (string, string) {
	base, ok := strings.CutSuffix(key, "_ns")
	if !ok || base == "" {
		return "", ""
	}
	ns, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil || ns == 0 {
		return "", ""
	}
	if durationKeys[key] {
		return base, time.Duration(ns).String()
	}
	return base, rfc3339(ns)
}
