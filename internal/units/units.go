package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("units: invalid syntax")

var sizeSuffixes = []struct {
	s string
	m float64
}{
	// longest first so "KiB" wins over "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a byte size: a non-negative number with an optional unit
// (B, KB/MB/GB/TB in powers of 1000, KiB/MiB/GiB/TiB or K/M/G/T in powers of
// 1024). A bare number is bytes.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("%w: empty size", ErrSyntax)
	}
	mult := 1.0
	num := in
	for _, suf := range sizeSuffixes {
		if strings.HasSuffix(strings.ToUpper(in), strings.ToUpper(suf.s)) && len(in) > len(suf.s) {
			// case-sensitive for the i in KiB is too strict for users; accept any case
			num = strings.TrimSpace(in[:len(in)-len(suf.s)])
			mult = suf.m
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: size %q (want e.g. 512KiB, 256MiB, 1GB)", ErrSyntax, s)
	}
	v := f * mult
	// float64(math.MaxInt64) rounds up to 2^63, which int64 cannot hold
	// (8388608TiB is exactly 2^63 and would convert to a negative size).
	if v >= 1<<63 {
		return 0, fmt.Errorf("%w: size %q too large", ErrSyntax, s)
	}
	return int64(v), nil
}

// FormatSize renders n bytes with a binary unit, e.g. "1.5MiB".
func FormatSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f := float64(n)
	i := -1
	for math.Abs(f) >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + string(units[i]) + "iB"
}

// ParseDuration parses a duration as time.ParseDuration does, and also
// accepts a "d" (24h) unit and a bare "0".
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("%w: empty duration", ErrSyntax)
	}
	if strings.HasSuffix(in, "d") {
		f, err := strconv.ParseFloat(strings.TrimSuffix(in, "d"), 64)
		if err == nil && f >= 0 && f < 1e5 {
			return time.Duration(f * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return 0, fmt.Errorf("%w: duration %q (want e.g. 500ms, 15s, 2m)", ErrSyntax, s)
	}
	return d, nil
}

// FormatDuration renders d the shortest way ParseDuration reads back:
// "15s", "500ms", "5m", "1h30m", "0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
