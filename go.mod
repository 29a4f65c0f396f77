module edr-lite

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
