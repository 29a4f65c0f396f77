//go:build !cgo

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "libedrpack is a C library: build it with cgo (CGO_ENABLED=1) and -buildmode=c-shared or -buildmode=c-archive")
	os.Exit(2)
}
