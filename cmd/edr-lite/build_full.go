//go:build !ecu

package main

// buildName names this build in "edr-lite version" (docs/ecu.md): the full
// build has every verb; "go build -tags ecu" makes the ECU build.
const buildName = "full"
