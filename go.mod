module edr-lite

go 1.26
